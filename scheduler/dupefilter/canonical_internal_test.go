package dupefilter

import (
	"net/url"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// TestCanonicalQueryAgreesWithSortedQuery: the shortcut may only claim a
// query is canonical when sorting and re-encoding it would give it back.
// Every query of up to 6 bytes over an alphabet of the separators, the
// escape characters and bytes that sort differently is tried (which bytes
// the shortcut accepts at all is TestUnreservedOnlyIsWhatQueryEscapeKeeps).
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

// TestUnreservedOnlyIsWhatQueryEscapeKeeps: the shortcut's byte set is
// exactly the bytes url.QueryEscape leaves alone, for all 256 of them. A
// byte added to it would keep "k=*" where the full path writes "k=%2A",
// and change the fingerprints stored in job directories.
func TestUnreservedOnlyIsWhatQueryEscapeKeeps(t *testing.T) {
	for c := 0; c < 256; c++ {
		s := string([]byte{byte(c)})
		if got, want := unreservedOnly(s), url.QueryEscape(s) == s; got != want {
			t.Errorf("unreservedOnly(%q) = %v, but QueryEscape keeps it: %v", s, got, want)
		}
	}
}

// TestFingerprintsUnchanged pins fingerprints computed by the code before
// the shortcut (c74628d): job directories and Redis frontiers store them,
// so a change would make a resumed crawl fetch everything again.
func TestFingerprintsUnchanged(t *testing.T) {
	for _, tc := range []struct{ method, url, body, want string }{
		{"GET", "http://localhost:41234/page/12345", "", "45c72dc76dd860656963d8b3e7d0e9db"},
		{"GET", "http://localhost:41234/catalogue/page-2.html?page=2&sort=asc", "", "ffea0f8ce9f45a2d5fc910cf33a5df5c"},
		{"GET", "HTTPS://Example.COM:443/a?b=2&a=1#top", "", "4f7392d4a28e226719d4a357eb86945c"},
		{"GET", "http://h/?a=x+y&a=%41&k=*", "", "cc2f15c11e08904d5a3006ad4a4f1419"},
		{"GET", "http://h/?&&a&b=&=c", "", "6811b20188af1bcb26b67360c5652a69"},
		{"GET", "https://u:p@h:8443/p?a=1&a=0", "", "2dbb545a3d8148259ffc5731dfcbe7ba"},
		{"GET", "http://h/?k=*", "", "6821009639d5b7f4992f955cd9589db6"},
		{"GET", "http://h/?k=!&z", "", "738cefd78350793bac14c133eff7a4ec"},
		{"GET", "http://h/?a=1&b=~x.-_Z9", "", "76e67096ae181c3c7c165d6d7c4339a9"},
		{"POST", "http://h/form", "q=1", "9f44a0f6a5f694e5592c26adee470585"},
		{"GET", "http://h/" + strings.Repeat("x", 300) + "?z=1&y=2", "", "fc0a8d2f0aacdc2da606a4550f8068f8"},
		{"POST", "http://h/up", strings.Repeat("b", 4096), "801e97a8f65635d0abc08d7a9aa05eaf"},
	} {
		r := spider.MustRequest(tc.url, nil)
		r.Method = tc.method
		if tc.body != "" {
			r.Body = []byte(tc.body)
		}
		if got := Of(r).String(); got != tc.want {
			t.Errorf("Of(%s %.60s) = %s, want %s", tc.method, tc.url, got, tc.want)
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
