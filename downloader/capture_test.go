package downloader

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	mathrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

// TestCapture: what a Capture holds after a download: the request as sent,
// the address connected to, the response head before decoding, and the
// body as received (still gzip-encoded, without its chunked transfer
// coding), while the response itself is decoded as usual.
func TestCapture(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(strings.Repeat("hello ", 200)))
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("X-Seen-Agent", r.Header.Get("User-Agent"))
		half := zipped.Len() / 2
		w.Write(zipped.Bytes()[:half])
		w.(http.Flusher).Flush() // chunked
		w.Write(zipped.Bytes()[half:])
	}))
	defer srv.Close()
	d := newTestDownloader(t, Options{Compression: true})
	c := &Capture{}
	req := spider.MustRequest(srv.URL+"/page?q=1", nil)
	req.Header = http.Header{"User-Agent": {"capture-test"}}
	res, err := d.Fetch(WithCapture(context.Background(), c), req)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != strings.Repeat("hello ", 200) || res.Header.Get("Content-Encoding") != "" {
		t.Errorf("the response is not decoded as usual")
	}
	if !c.Responded || c.StatusCode != 200 || c.Status != "200 OK" || c.Proto != "HTTP/1.1" {
		t.Errorf("status %v %d %q %q", c.Responded, c.StatusCode, c.Status, c.Proto)
	}
	if c.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("the captured head lost Content-Encoding: %v", c.Header)
	}
	if !bytes.Equal(c.Payload, zipped.Bytes()) {
		t.Errorf("captured payload %d bytes, want the %d gzip bytes as sent", len(c.Payload), zipped.Len())
	}
	if c.Remote() != srv.Listener.Addr().String() {
		t.Errorf("remote %q, want %q", c.Remote(), srv.Listener.Addr())
	}
	if c.Request == nil || c.Request.URL.RequestURI() != "/page?q=1" || c.Request.Header.Get("User-Agent") != "capture-test" ||
		c.Request.Header.Get("Accept-Encoding") == "" {
		t.Errorf("request as sent: %+v", c.Request)
	}
}

// TestCaptureTooLarge: a body over the size limit fails the download, and
// the capture holds what was read before the limit.
func TestCaptureTooLarge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 1000))
		w.(http.Flusher).Flush()
		w.Write(bytes.Repeat([]byte("y"), 5000))
	}))
	defer srv.Close()
	d := newTestDownloader(t, Options{MaxSize: 2000})
	c := &Capture{}
	_, err := d.Fetch(WithCapture(context.Background(), c), spider.MustRequest(srv.URL, nil))
	if !errors.Is(err, errkind.ResponseTooLarge) {
		t.Fatalf("err %v, want ResponseTooLarge", err)
	}
	if !c.Responded || len(c.Payload) < 1000 || len(c.Payload) > 6000 {
		t.Errorf("captured %d bytes of a body cut at 2000", len(c.Payload))
	}
}

// TestCaptureBudget: the copy a Capture keeps of an encoded body is
// counted in the memory budget until Release; an unencoded body is not
// copied at all; and a response whose body and copy together pass what
// one response may hold fails as too large instead of passing the budget.
func TestCaptureBudget(t *testing.T) {
	random := make([]byte, 200<<10) // does not compress: the gzip body is as large
	rnd := mathrand.New(mathrand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	gz := func(b []byte) []byte {
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
		zw.Write(b)
		zw.Close()
		return z.Bytes()
	}
	small, large := gz(random[:100<<10]), gz(random)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			w.Write(random[:100<<10])
		case "/small":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(small)
		case "/large":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(large)
		}
	}))
	defer srv.Close()
	b := NewBudget(minBudget, 1) // one response may hold 512 KiB
	d := newTestDownloader(t, Options{Compression: true, Budget: b})
	fetch := func(path string) (*spider.Response, *Capture, *Lease, error) {
		l := b.Lease(true)
		c := &Capture{}
		res, err := d.Fetch(WithLease(WithCapture(context.Background(), c), l), spider.MustRequest(srv.URL+path, nil))
		return res, c, l, err
	}

	res, c, l, err := fetch("/plain")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Payload) != len(res.Body) || &c.Payload[0] != &res.Body[0] {
		t.Errorf("an unencoded body is copied for the capture")
	}
	l.Release()

	res, c, l, err = fetch("/small")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Payload, small) || !bytes.Equal(res.Body, random[:100<<10]) {
		t.Fatalf("capture %d bytes, body %d bytes", len(c.Payload), len(res.Body))
	}
	withCopy, _ := b.Held()
	if withCopy < int64(len(res.Body)+len(c.Payload)) {
		t.Errorf("held %d bytes: the body (%d) and its captured copy (%d) are not both counted", withCopy, len(res.Body), len(c.Payload))
	}
	c.Release()
	if now, _ := b.Held(); now != withCopy-int64(cap(c.Payload)) || now < int64(len(res.Body)) {
		t.Errorf("held %d bytes after the capture's release, want %d (the body's)", now, withCopy-int64(cap(c.Payload)))
	}
	l.Release()
	if now, _ := b.Held(); now != 0 {
		t.Errorf("held %d bytes after the lease's release", now)
	}

	// 200 KiB of body and as much of copy, each growing by doubling,
	// pass the 512 KiB one response may hold.
	if _, _, l, err = fetch("/large"); !errors.Is(err, errkind.ResponseTooLarge) || !strings.Contains(err.Error(), "DOWNLOAD_MEMORY_BUDGET") {
		t.Errorf("err %v, want ResponseTooLarge naming DOWNLOAD_MEMORY_BUDGET", err)
	}
	l.Release()
	if _, peak := b.Held(); peak > b.maxHold() {
		t.Errorf("peak %d bytes, over the %d one response may hold", peak, b.maxHold())
	}
	// Without a capture the same response fits.
	l = b.Lease(true)
	if _, err := d.Fetch(WithLease(context.Background(), l), spider.MustRequest(srv.URL+"/large", nil)); err != nil {
		t.Errorf("without a capture: %v", err)
	}
	l.Release()
}
