package sqlitem

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/pipeline/feed"
)

func rec(fields ...string) feed.Record {
	var r feed.Record
	for i := 0; i < len(fields); i += 2 {
		r.Fields = append(r.Fields, feed.Field{Name: fields[i], Value: json.RawMessage(fields[i+1])})
	}
	return r
}

func TestParseParams(t *testing.T) {
	for _, tc := range []struct {
		query, want, err string
	}{
		{"", "items [] _extra", ""},
		{"table=q&key=site,%20id&extra=rest&sslmode=disable", "q [site id] rest sslmode=disable", ""},
		{"table=", "", "table is empty"},
		{"key=a,a", "", `"a" twice`},
		{"key=a,", "", "empty field name"},
		{"key=_extra", "", "also the extra column"},
	} {
		q, _ := url.ParseQuery(tc.query)
		p, err := ParseParams(q)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.query, err, tc.err)
			}
			continue
		}
		got := strings.TrimSpace(fmt.Sprintf("%s %v %s %s", p.Table, p.Key, p.Extra, q.Encode()))
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.query, got, err, tc.want)
		}
	}
}

func TestColumnsAndSplit(t *testing.T) {
	p := Params{Table: "items", Extra: "_extra", Key: []string{"url"}}
	r := rec("url", `"u"`, "n", `1.5`, "ok", `true`, "tags", `["a"]`, "none", `null`)
	var kinds []string
	for _, c := range p.Columns(r) {
		kinds = append(kinds, c.Name+":"+[]string{"text", "number", "bool", "json"}[c.Kind])
	}
	if got := strings.Join(kinds, " "); got != "url:text n:number ok:bool tags:json none:text _extra:json" {
		t.Errorf("columns %s", got)
	}
	cols := []string{"url", "n"}
	index := map[string]int{"url": 0, "n": 1}
	sp := NewSplitter(cols, index, true, "_extra")
	vals, extra, err := sp.Split(rec("n", `2`, "url", `"v"`, "author", `"Ann"`, "a\"b", `1`))
	if err != nil || string(vals[0]) != `"v"` || string(vals[1]) != "2" || string(extra) != `{"author":"Ann","a\"b":1}` {
		t.Errorf("split = %s %s %s, %v", vals[0], vals[1], extra, err)
	}
	// The next record reuses the memory: nothing of the last one is left.
	vals, extra, err = sp.Split(rec("url", `"w"`))
	if err != nil || string(vals[0]) != `"w"` || vals[1] != nil || extra != nil {
		t.Errorf("second split = %s %s %s, %v", vals[0], vals[1], extra, err)
	}
	if _, _, err := NewSplitter(cols, index, false, "_extra").Split(rec("url", `"v"`, "author", `"Ann"`)); err == nil || !strings.Contains(err.Error(), "author") {
		t.Errorf("split without an extra column = %v, want an error naming author", err)
	}
	if err := p.Validate(rec("url", "null")); err == nil {
		t.Error("Validate accepts a null key")
	}
}

func TestDedupeKeepsTheLast(t *testing.T) {
	p := Params{Key: []string{"url"}}
	batch := []feed.Record{rec("url", `"a"`, "n", "1"), rec("url", `"b"`, "n", "1"), rec("url", `"\u0061"`, "n", "2")}
	got := p.Dedupe(batch)
	if len(got) != 2 || string(got[0].Fields[0].Value) != `"b"` || string(got[1].Fields[1].Value) != "2" {
		t.Errorf("dedupe = %v", got)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "url", `a"b\c`, "tab\there\x01", "é ü"} {
		got := AppendJSONString([]byte("x"), s)
		want, _ := json.Marshal(s)
		if string(got) != "x"+string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want x%s", s, got, want)
		}
	}
}
