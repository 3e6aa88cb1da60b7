package sqlitesink

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestSQLValue: each JSON value is bound as SQLite's ->> operator gives it.
func TestSQLValue(t *testing.T) {
	for _, tc := range []struct {
		json string
		want any
	}{
		{`null`, nil},
		{``, nil},
		{`true`, int64(1)},
		{`false`, int64(0)},
		{`"plain"`, "plain"},
		{`"a\"b\\c\u00e9"`, "a\"b\\cé"},
		{`42`, int64(42)},
		{`-7`, int64(-7)},
		{`1.5`, 1.5},
		{`1e3`, 1000.0},
		{`123456789012345678901234567890`, 1.2345678901234568e29},
		{`1e400`, "1e400"},
		{`[1,"x"]`, `[1,"x"]`},
		{`{"a":{"b":null}}`, `{"a":{"b":null}}`},
	} {
		got, err := sqlValue(json.RawMessage(tc.json))
		if err != nil || fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", tc.want, tc.want) {
			t.Errorf("sqlValue(%s) = %T %v, %v; want %T %v", tc.json, got, got, err, tc.want, tc.want)
		}
	}
}
