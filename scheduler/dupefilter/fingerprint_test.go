package dupefilter_test

import (
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
)

// TestFingerprintStream checks Of against the definition (SHA-256 of each
// field's 8-byte big-endian length and bytes: method, canonical URL, body),
// on both sides of the size where Of stops hashing from the stack.
func TestFingerprintStream(t *testing.T) {
	for _, n := range []int{0, 1, 150, 200, 201, 256, 4096} {
		req := spider.MustRequest("http://Example.com:80/a/b?z=1&y=2", nil)
		if n > 0 {
			req.Method, req.Body = http.MethodPost, []byte(strings.Repeat("x", n))
		}
		h := sha256.New()
		for _, f := range [][]byte{[]byte(req.EffectiveMethod()), []byte(dupefilter.CanonicalURL(req.URL)), req.Body} {
			h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(f))))
			h.Write(f)
		}
		var want dupefilter.Fingerprint
		copy(want[:], h.Sum(nil))
		if got := dupefilter.Of(req); got != want {
			t.Errorf("body of %d bytes: Of = %x, want %x", n, got, want)
		}
	}
}

// TestFingerprintSalt checks that a salt (MetaSalt) is a last field of the
// hashed bytes, on both sides of the stack buffer's size, that a request
// without one keeps its fingerprint, and that Unsalted ignores it.
func TestFingerprintSalt(t *testing.T) {
	for _, n := range []int{0, 150, 190, 201, 4096} {
		for _, salt := range []string{"", "recrawl:1", "recrawl:2", strings.Repeat("s", 100)} {
			req := spider.MustRequest("http://example.com/a?x=1", nil)
			if n > 0 {
				req.Method, req.Body = http.MethodPost, []byte(strings.Repeat("x", n))
			}
			plain := dupefilter.Of(req)
			if salt != "" {
				req.Set(dupefilter.MetaSalt, salt)
			}
			h := sha256.New()
			fields := [][]byte{[]byte(req.EffectiveMethod()), []byte(dupefilter.CanonicalURL(req.URL)), req.Body}
			if salt != "" {
				fields = append(fields, []byte(salt))
			}
			for _, f := range fields {
				h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(f))))
				h.Write(f)
			}
			var want dupefilter.Fingerprint
			copy(want[:], h.Sum(nil))
			got := dupefilter.Of(req)
			if got != want {
				t.Errorf("body %d, salt %q: Of = %x, want %x", n, salt, got, want)
			}
			if (got == plain) != (salt == "") {
				t.Errorf("body %d, salt %q: salted and plain fingerprints equal: %v", n, salt, got == plain)
			}
			if u := dupefilter.Unsalted(req); u != plain {
				t.Errorf("body %d, salt %q: Unsalted = %x, want the plain fingerprint %x", n, salt, u, plain)
			}
		}
	}
	// A salt that is not a string is no salt.
	req := spider.MustRequest("http://example.com/", nil)
	plain := dupefilter.Of(req)
	if req.Set(dupefilter.MetaSalt, 3); dupefilter.Of(req) != plain {
		t.Error("a non-string salt changed the fingerprint")
	}
}
