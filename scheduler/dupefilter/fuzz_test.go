package dupefilter_test

import (
	"net/url"
	"testing"

	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
)

// FuzzCanonicalURL: CanonicalURL is idempotent (the canonical form of a
// canonical URL is itself), so two spellings of one resource never get two
// fingerprints depending on how often they were canonicalised; and it
// never panics on what url.Parse accepts.
func FuzzCanonicalURL(f *testing.F) {
	for _, s := range []string{
		"http://000?&", "HTTP://Example.COM:80/a/../b?b=2&a=1&a=0#frag", "https://u:p@h:443/%7Euser?x=%zz&y",
		"http://h/?&&a&b=&=c", "http://[::1]:80/", "http://h/p;params?q=a+b%20c", "http://h?a=1&a=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		c1 := dupefilter.CanonicalURL(u)
		u2, err := url.Parse(c1)
		if err != nil {
			t.Skipf("canonical form %q does not parse: %v", c1, err) // the input was not a usable URL
		}
		if c2 := dupefilter.CanonicalURL(u2); c2 != c1 {
			t.Fatalf("not idempotent: %q -> %q -> %q", raw, c1, c2)
		}
		r := &spider.Request{URL: u}
		if dupefilter.Of(r) != dupefilter.Of(&spider.Request{URL: u2}) {
			t.Fatalf("%q and its canonical form %q have different fingerprints", raw, c1)
		}
	})
}
