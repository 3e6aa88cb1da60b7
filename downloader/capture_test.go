package downloader

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
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
	if !bytes.Equal(c.Payload.Bytes(), zipped.Bytes()) {
		t.Errorf("captured payload %d bytes, want the %d gzip bytes as sent", c.Payload.Len(), zipped.Len())
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
	if !c.Responded || c.Payload.Len() < 1000 || c.Payload.Len() > 6000 {
		t.Errorf("captured %d bytes of a body cut at 2000", c.Payload.Len())
	}
}
