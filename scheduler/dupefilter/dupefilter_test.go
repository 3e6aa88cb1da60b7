package dupefilter_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
)

func TestCanonicalURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"HTTP://Example.COM/Path", "http://example.com/Path"},
		{"https://example.com:443/a", "https://example.com/a"},
		{"http://example.com:80/a", "http://example.com/a"},
		{"http://example.com:8080/a", "http://example.com:8080/a"},
		{"https://example.com:80/a", "https://example.com:80/a"},
		{"http://example.com", "http://example.com/"},
		{"http://example.com/a?b=2&a=1", "http://example.com/a?a=1&b=2"},
		{"http://example.com/a?a=2&a=1", "http://example.com/a?a=1&a=2"},
		{"http://example.com/a?a=hello%20world", "http://example.com/a?a=hello+world"},
		{"http://example.com/a?a=hello+world", "http://example.com/a?a=hello+world"},
		{"http://example.com/a?b&a=", "http://example.com/a?a=&b"},
		{"http://example.com/a#frag", "http://example.com/a"},
		{"http://example.com/a?x=1#frag", "http://example.com/a?x=1"},
	}
	for _, tc := range tests {
		r := spider.MustRequest(tc.in, nil)
		if got := dupefilter.CanonicalURL(r.URL); got != tc.want {
			t.Errorf("CanonicalURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFingerprint(t *testing.T) {
	fp := func(method, u string, body string) dupefilter.Fingerprint {
		r := spider.MustRequest(u, nil)
		r.Method = method
		if body != "" {
			r.Body = []byte(body)
		}
		return dupefilter.Of(r)
	}
	same := [][2]dupefilter.Fingerprint{
		{fp("", "http://a.com/x?b=1&a=2", ""), fp("GET", "HTTP://A.COM:80/x?a=2&b=1#top", "")},
	}
	for i, p := range same {
		if p[0] != p[1] {
			t.Errorf("pair %d: fingerprints differ", i)
		}
	}
	base := fp("GET", "http://a.com/x", "")
	for name, other := range map[string]dupefilter.Fingerprint{
		"method": fp("POST", "http://a.com/x", ""),
		"body":   fp("GET", "http://a.com/x", "q=1"),
		"path":   fp("GET", "http://a.com/X", ""),
		"scheme": fp("GET", "https://a.com/x", ""),
		"query":  fp("GET", "http://a.com/x?", ""), /* empty query equals none */
	} {
		if name == "query" {
			if other != base {
				t.Errorf("an empty query changes the fingerprint")
			}
			continue
		}
		if other == base {
			t.Errorf("changing the %s does not change the fingerprint", name)
		}
	}
	if len(base.String()) != 32 {
		t.Errorf("String() = %q, want 32 hex digits", base.String())
	}
}

func TestFilter(t *testing.T) {
	for _, debug := range []bool{false, true} {
		var logs bytes.Buffer
		st := stats.New()
		f := dupefilter.NewFilter(dupefilter.NewMemorySet(), st, zerolog.New(&logs).Level(zerolog.DebugLevel), debug)
		ctx := context.Background()
		seen := func(u string, dontFilter bool) bool {
			r := spider.MustRequest(u, nil)
			r.DontFilter = dontFilter
			dup, err := f.Seen(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			return dup
		}
		if seen("http://a.com/1", false) {
			t.Fatal("first request filtered")
		}
		if !seen("http://a.com/1", false) || !seen("http://A.com/1#x", false) {
			t.Fatal("duplicate not filtered")
		}
		if seen("http://a.com/1", true) {
			t.Fatal("DontFilter request filtered")
		}
		if seen("http://a.com/2", true) || seen("http://a.com/2", false) {
			t.Fatal("a DontFilter request must not record its fingerprint")
		}
		if got := st.Get(dupefilter.StatFiltered); got != 2 {
			t.Fatalf("%s = %v, want 2", dupefilter.StatFiltered, got)
		}
		lines := strings.Count(logs.String(), "filtered duplicate request")
		if want := map[bool]int{false: 1, true: 2}[debug]; lines != want {
			t.Fatalf("DUPEFILTER_DEBUG=%v: %d log lines, want %d:\n%s", debug, lines, want, logs.String())
		}
		if !debug && !strings.Contains(logs.String(), "DUPEFILTER_DEBUG") {
			t.Fatal("first duplicate log does not mention DUPEFILTER_DEBUG")
		}
	}
}
