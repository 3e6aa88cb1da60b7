package hostile

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"io"
	"testing"

	"github.com/andybalholm/brotli"
)

// TestBombsDecode: each bomb decodes to exactly BombSize zero bytes.
func TestBombsDecode(t *testing.T) {
	const size = 3<<20 + 12345
	s := &Server{BombSize: size, bombs: map[string][]byte{}}
	for _, enc := range []string{"gzip", "deflate", "br"} {
		b, err := s.bomb(enc)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader
		switch enc {
		case "gzip":
			if r, err = gzip.NewReader(bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		case "deflate":
			r = flate.NewReader(bytes.NewReader(b))
		case "br":
			r = brotli.NewReader(bytes.NewReader(b))
		}
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if len(out) != size || bytes.Count(out, []byte{0}) != size {
			t.Errorf("%s: decoded %d bytes, want %d zeros", enc, len(out), size)
		}
		t.Logf("%s: %d bytes on the wire", enc, len(b))
	}
}
