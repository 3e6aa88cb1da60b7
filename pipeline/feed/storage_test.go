package feed

import (
	"strings"
	"testing"
	"time"
)

func TestExpandPlaceholders(t *testing.T) {
	at := time.Date(2026, 5, 1, 9, 30, 5, 0, time.FixedZone("CEST", 2*3600))
	for _, tc := range []struct{ in, want string }{
		{"s3://b/items-%(time)s.jsonl.gz", "s3://b/items-2026-05-01T07-30-05.jsonl.gz"},
		{"s3://b/%(name)s/%(name)s-%(time)s.csv", "s3://b/quotes/quotes-2026-05-01T07-30-05.csv"},
		{"s3://b/plain.json", "s3://b/plain.json"},
		{"s3://b/%(other)s.json", "s3://b/%(other)s.json"},
	} {
		if got := ExpandPlaceholders(tc.in, "quotes", at); got != tc.want {
			t.Errorf("ExpandPlaceholders(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := HasPlaceholders(tc.in); got != (tc.in != tc.want) {
			t.Errorf("HasPlaceholders(%q) = %v", tc.in, got)
		}
	}
}

// TestStorageURIs checks which paths are storage URIs and the errors for
// the ones no storage serves.
func TestStorageURIs(t *testing.T) {
	for _, tc := range []struct {
		path string
		want string // in New's error; "" for a local file that works
	}{
		{"items.jsonl", ""},
		{"out/a://b/items.jsonl", ""}, // a local path with :// inside a folder name
		{"nosuch://bucket/items.jsonl", "no feed storage for this URI"},
		{"items.jsonl.gz", "local feeds are not compressed"},
	} {
		_, err := New(tc.path, Options{})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one saying %q", tc.path, err, tc.want)
		}
	}
}
