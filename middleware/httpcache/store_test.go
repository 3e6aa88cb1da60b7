package httpcache

import (
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

func TestFingerprint(t *testing.T) {
	fp := func(method, u string, body string) string {
		r := spider.MustRequest(u, nil)
		r.Method, r.Body = method, []byte(body)
		return Fingerprint(r)
	}
	base := fp("GET", "http://example.com/p?a=1&b=2", "")
	for _, same := range []string{
		fp("", "http://example.com/p?a=1&b=2", ""),
		fp("GET", "HTTP://EXAMPLE.COM:80/p?b=2&a=1", ""),
		fp("GET", "http://example.com/p?a=1&b=2#section", ""),
	} {
		if same != base {
			t.Error("equivalent requests have different fingerprints")
		}
	}
	for _, other := range []string{
		fp("POST", "http://example.com/p?a=1&b=2", ""),
		fp("GET", "http://example.com/p?a=1&b=3", ""),
		fp("GET", "https://example.com/p?a=1&b=2", ""),
		fp("GET", "http://example.com/P?a=1&b=2", ""),
		fp("GET", "http://example.com/p?a=1&b=2", "x"),
	} {
		if other == base {
			t.Error("different requests share a fingerprint")
		}
	}
}
