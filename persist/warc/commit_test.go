package warc

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestCompressorsOutliveGC: a compressor given back is handed out again
// after garbage collections, which empty a sync.Pool: making one again
// costs more than compressing a page (see compressors).
func TestCompressorsOutliveGC(t *testing.T) {
	for _, level := range []int{gzip.BestSpeed, GzipStore} {
		c := newCompressors(level)
		zw := c.get()
		c.put(zw)
		runtime.GC()
		runtime.GC()
		if got := c.get(); got != zw {
			t.Errorf("level %d: a new compressor after two collections, want the one given back", level)
		}
	}
}

// TestCompressorsOverflow: compressors given back past the free list's
// room are kept for reuse too, and each one handed out works.
func TestCompressorsOverflow(t *testing.T) {
	c := newCompressors(gzip.BestSpeed)
	n := cap(c.free) + 3
	zws := make([]*gzip.Writer, n)
	for i := range zws {
		zws[i] = c.get()
	}
	for _, zw := range zws {
		c.put(zw)
	}
	if len(c.free) != cap(c.free) {
		t.Errorf("free list holds %d compressors, want %d", len(c.free), cap(c.free))
	}
	for range n {
		zw := c.get()
		var b appendWriter
		zw.Reset(&b)
		if _, err := zw.Write([]byte("record")); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if len(b.b) == 0 {
			t.Fatal("nothing written")
		}
	}
}

// TestSmallRequestsStored: at a compressing level, a small request record
// is stored in its gzip member (deflate block type 00) and a large one
// (a POST with a big body) compressed; the response is compressed.
func TestSmallRequestsStored(t *testing.T) {
	w := newTestWriter(t, t.TempDir(), Options{GzipLevel: gzip.BestSpeed})
	defer w.Close()
	big := exchange("https://example.com/post", 200, "page")
	big.Request = RequestBytes("POST", "/post", "example.com", http.Header{}, bytes.Repeat([]byte("field=value&"), 1000))
	for _, c := range []struct {
		name      string
		ex        *Exchange
		reqStored bool
	}{
		{"GET", exchange("https://example.com/", 200, strings.Repeat("<p>text</p>", 400)), true},
		{"big POST", big, false},
	} {
		p, _, err := w.prepare(c.ex)
		if err != nil {
			t.Fatal(err)
		}
		// A gzip member's deflate data starts after its 10-byte header;
		// bits 1-2 of its first byte are the first block's type.
		if stored := p.data[10]&6 == 0; stored != c.reqStored {
			t.Errorf("%s: request record stored = %v, want %v", c.name, stored, c.reqStored)
		}
		if p.data[p.reqLen+10]&6 == 0 {
			t.Errorf("%s: response record stored, want compressed", c.name)
		}
		for _, m := range [][]byte{p.data[:p.reqLen], p.data[p.reqLen:]} {
			zr, err := gzip.NewReader(bytes.NewReader(m))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(zr); err != nil {
				t.Errorf("%s: member unreadable: %v", c.name, err)
			}
		}
	}
}
