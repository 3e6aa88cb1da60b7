package warc

import (
	"bytes"
	"fmt"
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

// TestEncodedPayloadsStored: at a compressing level, a response whose
// payload is compressed already (a Content-Encoding, a compressed media
// type) is stored in its gzip member, unless small; other responses are
// compressed.
func TestEncodedPayloadsStored(t *testing.T) {
	w := newTestWriter(t, t.TempDir(), Options{GzipLevel: gzip.BestSpeed})
	defer w.Close()
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	for i := range 2000 {
		fmt.Fprintf(zw, "<p>paragraph %d</p>\n", i*7919%10007)
	}
	zw.Close()
	page := strings.Repeat("<p>text</p>", 400)
	ex := func(h http.Header, mime, payload string) *Exchange {
		e := exchange("https://example.com/", 200, payload)
		e.ResponseHead = ResponseHeadBytes("HTTP/1.1", "200 OK", h)
		e.MIME = mime
		return e
	}
	for _, c := range []struct {
		name   string
		ex     *Exchange
		stored bool
	}{
		{"plain page", ex(http.Header{"Content-Type": {"text/html"}}, "text/html", page), false},
		{"gzip page", ex(http.Header{"Content-Type": {"text/html"}, "Content-Encoding": {"gzip"}}, "text/html", zipped.String()), true},
		{"br, name in lower case", ex(http.Header{"content-encoding": {" br "}}, "text/html", zipped.String()), true},
		{"identity", ex(http.Header{"Content-Encoding": {"identity"}}, "text/html", page), false},
		{"JPEG", ex(http.Header{"Content-Type": {"image/jpeg"}}, "image/jpeg", zipped.String()), true},
		{"small gzip page", ex(http.Header{"Content-Encoding": {"gzip"}}, "text/html", zipped.String()[:500]), false},
	} {
		p, _, err := w.prepare(c.ex)
		if err != nil {
			t.Fatal(err)
		}
		if stored := p.data[p.reqLen+10]&6 == 0; stored != c.stored {
			t.Errorf("%s: response record stored = %v, want %v", c.name, stored, c.stored)
		}
		zr, err := gzip.NewReader(bytes.NewReader(p.data[p.reqLen:]))
		if err != nil {
			t.Fatal(err)
		}
		if rec, err := io.ReadAll(zr); err != nil || !bytes.HasSuffix(rec, append(c.ex.Payload, "\r\n\r\n"...)) {
			t.Errorf("%s: member unreadable or without its payload: %v", c.name, err)
		}
	}
}
