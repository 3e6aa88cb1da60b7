package dupefilter

import (
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// TestCanonicalQueryAgreesWithSortedQuery: the shortcut may only claim a
// query is canonical when sorting and re-encoding it would give it back.
// Every query of up to 6 bytes over an alphabet with the separators,
// escapes and an unsorted pair is tried.
func TestCanonicalQueryAgreesWithSortedQuery(t *testing.T) {
	const alphabet = "ab1=&%+~"
	buf := make([]byte, 0, 6)
	shortcuts := 0
	var walk func()
	walk = func() {
		raw := string(buf)
		if raw != "" && canonicalQuery(raw) {
			shortcuts++
			if got := sortedQuery(raw); got != raw {
				t.Fatalf("canonicalQuery(%q) = true, but sortedQuery gives %q", raw, got)
			}
		}
		if len(buf) == cap(buf) {
			return
		}
		for i := 0; i < len(alphabet); i++ {
			buf = append(buf, alphabet[i])
			walk()
			buf = buf[:len(buf)-1]
		}
	}
	walk()
	if shortcuts < 1000 {
		t.Fatalf("only %d queries took the shortcut: the test no longer exercises it", shortcuts)
	}
	for _, raw := range []string{"a=1&b=2", "page=12", "a&a=", "x=1&x=1", "a.b~c=-_"} {
		if !canonicalQuery(raw) {
			t.Errorf("canonicalQuery(%q) = false, want the shortcut", raw)
		}
	}
	for _, raw := range []string{"b=1&a=2", "a=1&", "&a=1", "a=1&&b=2", "a=b=c", "a=%41", "a=x+y", "a=1&a=0"} {
		if canonicalQuery(raw) {
			t.Errorf("canonicalQuery(%q) = true, want the slow path", raw)
		}
	}
}

// TestFingerprintAllocatesNothing: the usual link (a GET with a short URL
// in canonical form) is fingerprinted without a heap allocation.
func TestFingerprintAllocatesNothing(t *testing.T) {
	r := spider.MustRequest("http://localhost:41234/catalogue/page-2.html?page=2&sort=asc", nil)
	if n := testing.AllocsPerRun(100, func() { Of(r) }); n != 0 {
		t.Errorf("Of allocates %v times per call, want 0", n)
	}
}
