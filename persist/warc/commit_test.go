package warc

import (
	"runtime"
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
