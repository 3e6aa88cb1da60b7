package httpcache

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// FuzzCanonicalURL: the cache key's canonical URL is idempotent.
func FuzzCanonicalURL(f *testing.F) {
	for _, s := range []string{"http://000?&", "HTTP://Example.COM:80/a?b=2&a=1#f", "https://u:p@h:443/%7E?x=%zz", "http://h/?&&a&b=&=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		c1 := CanonicalURL(u)
		u2, err := url.Parse(c1)
		if err != nil {
			return
		}
		if c2 := CanonicalURL(u2); c2 != c1 {
			t.Fatalf("not idempotent: %q -> %q -> %q", raw, c1, c2)
		}
	})
}

// FuzzCachePolicyHeaders: a server's Cache-Control, Age, Expires and Date
// headers never make the RFC 9111 policy panic or compute a negative age.
func FuzzCachePolicyHeaders(f *testing.F) {
	f.Add("max-age=99999999999999999999, s-maxage=-1", "9223372036854775807", "Wed, 21 Oct 2026 07:28:00 GMT", "0")
	f.Add("no-cache=\"set-cookie\", ,,=,max-age", "-5", "garbage", "Fri, 31 Dec 9999 23:59:59 GMT")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, cc, age, expires, date string) {
		m := &Meta{Header: http.Header{"Cache-Control": {cc}, "Age": {age}, "Expires": {expires}, "Date": {date}},
			Stored: now.Add(-time.Hour)}
		if a := currentAge(m, now); a < 0 {
			t.Fatalf("negative age %v", a)
		}
		_ = cacheControl(m.Header)
	})
}
