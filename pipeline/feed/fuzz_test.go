package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzAppendToExistingFeed: whatever an existing feed file holds (a damaged
// or hostile file), continuing it never panics, and continuing a valid
// JSON array or JSON Lines file keeps it valid with one more item.
func FuzzAppendToExistingFeed(f *testing.F) {
	f.Add([]byte("[\n{\"n\":1}\n]\n"), uint8(1))
	f.Add([]byte("[]"), uint8(1))
	f.Add([]byte("  [ ]  \n\n"), uint8(1))
	f.Add([]byte("{\"n\":1}\n{\"n\":2}"), uint8(0))
	f.Add([]byte("n,t\n1,\"a\nb\"\n"), uint8(2))
	f.Add([]byte("\"unterminated,header\n"), uint8(2))
	f.Add([]byte("]"), uint8(1))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, existing []byte, which uint8) {
		format := Formats[int(which)%len(Formats)]
		path := filepath.Join(dir, "feed")
		if err := os.WriteFile(path, existing, 0o600); err != nil {
			t.Fatal(err)
		}
		ex, err := New(path, Options{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Check() != nil {
			return
		}
		ctx := context.Background()
		if err := ex.Open(ctx, nil); err != nil {
			return
		}
		if _, err := ex.ProcessItem(ctx, map[string]any{"n": 7}); err != nil {
			t.Fatalf("writing an item: %v", err)
		}
		if err := ex.Close(ctx); err != nil {
			t.Fatal(err)
		}
		out, _ := os.ReadFile(path)
		switch format {
		case JSON:
			var before, after []json.RawMessage
			if json.Unmarshal(existing, &before) == nil && bytes.TrimSpace(existing)[0] == '[' {
				if err := json.Unmarshal(out, &after); err != nil || len(after) != len(before)+1 {
					t.Fatalf("%q + 1 item = %q (%v)", existing, out, err)
				}
			}
		case JSONLines:
			if allJSONLines(existing) && !allJSONLines(out) {
				t.Fatalf("%q + 1 item = %q", existing, out)
			}
		}
	})
}

func allJSONLines(b []byte) bool {
	for _, l := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
		if len(l) > 0 && !json.Valid(l) {
			return false
		}
	}
	return true
}
