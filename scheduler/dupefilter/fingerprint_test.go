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
