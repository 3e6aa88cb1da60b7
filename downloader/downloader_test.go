package downloader

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/syncbuf"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

func newTestDownloader(t *testing.T, opts Options) *Downloader {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	d := New(opts)
	t.Cleanup(d.Close)
	return d
}

func get(t *testing.T, d *Downloader, u string) (*spider.Response, error) {
	t.Helper()
	return d.Fetch(context.Background(), spider.MustRequest(u, nil))
}

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func wantKind(t *testing.T, err error, kind *errkind.Kind) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error = %v, want kind %s", err, kind.Name())
	}
	var de *Error
	if !errors.As(err, &de) || de.URL == "" {
		t.Fatalf("error %v is not an *Error naming the URL", err)
	}
	if errkind.Of(err) != kind.Name() {
		t.Fatalf("KindOf = %q, want %q", errkind.Of(err), kind.Name())
	}
}

func TestDownloadTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.Write([]byte("<html>"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	d := newTestDownloader(t, Options{Timeout: 50 * time.Millisecond})
	for _, path := range []string{"/slow-headers", "/slow-body"} {
		_, err := get(t, d, srv.URL+path)
		wantKind(t, err, errkind.DownloadTimeout)
	}
	// The download_timeout meta overrides the setting for one request.
	req := spider.MustRequest(srv.URL+"/slow-headers", nil).Set(MetaDownloadTimeout, 0.01)
	_, err := newTestDownloader(t, Options{Timeout: time.Hour}).Fetch(context.Background(), req)
	wantKind(t, err, errkind.DownloadTimeout)
}

func TestMaxSizeFromContentLengthCancelsBeforeReading(t *testing.T) {
	var written atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(100<<20))
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	d := newTestDownloader(t, Options{MaxSize: 1 << 20})
	_, err := get(t, d, srv.URL)
	wantKind(t, err, errkind.ResponseTooLarge)
	if !strings.Contains(err.Error(), "Content-Length") {
		t.Errorf("error %q should say the Content-Length was too large", err)
	}
	// Socket buffers absorb some, but far from the 100 MiB announced.
	if n := written.Load(); n > 20<<20 {
		t.Errorf("server wrote %d bytes before the download was cancelled", n)
	}
}

func TestMaxSizeWhileStreaming(t *testing.T) {
	var written atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		// Chunked (no Content-Length), growing without end.
		chunk := bytes.Repeat([]byte("y"), 8<<10)
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	d := newTestDownloader(t, Options{MaxSize: 256 << 10})
	_, err := get(t, d, srv.URL)
	wantKind(t, err, errkind.ResponseTooLarge)
	if n := written.Load(); n > 32<<20 {
		t.Errorf("server wrote %d bytes before the download was cancelled", n)
	}
	// Under the limit is fine; the download_maxsize meta overrides.
	small := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("z"), 1000)) })
	if res, err := get(t, d, small.URL); err != nil || len(res.Body) != 1000 {
		t.Fatalf("1000-byte body under a 256 KiB limit: %v", err)
	}
	req := spider.MustRequest(small.URL, nil).Set(MetaDownloadMaxSize, 999)
	_, err = d.Fetch(context.Background(), req)
	wantKind(t, err, errkind.ResponseTooLarge)
	req = spider.MustRequest(small.URL, nil).Set(MetaDownloadMaxSize, 1000)
	if _, err := d.Fetch(context.Background(), req); err != nil {
		t.Fatalf("body exactly at the limit: %v", err)
	}
}

// bomb returns about mib MiB of zeros encoded with encoding, built cheaply:
// one compressed MiB repeated (gzip members concatenate; a deflate block
// ending in a sync flush can be repeated, its back-references only ever
// see zeros).
func bomb(t *testing.T, encoding string, mib int) []byte {
	t.Helper()
	zeros := make([]byte, 1<<20)
	var buf bytes.Buffer
	switch encoding {
	case "gzip":
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(zeros)
		zw.Close()
		return bytes.Repeat(buf.Bytes(), mib)
	case "deflate":
		fw, _ := flate.NewWriter(&buf, flate.BestCompression)
		fw.Write(zeros)
		fw.Flush()
		return append([]byte{0x78, 0xda}, bytes.Repeat(buf.Bytes(), mib)...) // zlib header
	case "br":
		// Encoding hundreds of MiB with brotli is slow under -race, so this
		// one is stored: 256 MiB of zeros at quality 5, window 2^24, 203 bytes.
		b, err := os.ReadFile("testdata/zeros-256MiB.br")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("unknown encoding %s", encoding)
	return nil
}

func TestDecompressionBombStopsAtTheLimit(t *testing.T) {
	const limit = 1 << 20 // 1 MiB allowed
	for _, enc := range []string{"gzip", "deflate", "br"} {
		t.Run(enc, func(t *testing.T) {
			bomb := bomb(t, enc, 64) // 64 MiB decompressed (br: 256)
			if len(bomb) > 1<<20 {
				t.Fatalf("bomb is %d bytes compressed", len(bomb))
			}
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", enc)
				w.Header().Set("Content-Type", "text/html")
				w.Write(bomb)
			})
			d := newTestDownloader(t, Options{MaxSize: limit, Compression: true})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := get(t, d, srv.URL)
			runtime.ReadMemStats(&after)
			wantKind(t, err, errkind.ResponseTooLarge)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("allocated %d MiB to reject a bomb at %d MiB", alloc>>20, limit>>20)
			}
		})
	}
}

func TestDecompression(t *testing.T) {
	page := strings.Repeat("<p>hello</p>", 100)
	encoded := map[string][]byte{"identity": []byte(page)}
	for _, enc := range []string{"gzip", "br"} {
		var buf bytes.Buffer
		var w io.WriteCloser
		if enc == "gzip" {
			w = gzip.NewWriter(&buf)
		} else {
			w = brotli.NewWriter(&buf)
		}
		io.WriteString(w, page)
		w.Close()
		encoded[enc] = buf.Bytes()
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	io.WriteString(zw, page)
	zw.Close()
	encoded["deflate"] = z.Bytes()
	raw := z.Bytes()[2 : z.Len()-4] // raw deflate, as some servers send
	encoded["deflate-raw"] = raw

	var gotAccept atomic.Value
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotAccept.Store(r.Header.Get("Accept-Encoding"))
		enc := strings.TrimPrefix(r.URL.Path, "/")
		w.Header().Set("Content-Encoding", strings.TrimSuffix(enc, "-raw"))
		w.Write(encoded[enc])
	})
	d := newTestDownloader(t, Options{Compression: true})
	for enc := range encoded {
		res, err := get(t, d, srv.URL+"/"+enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if string(res.Body) != page {
			t.Errorf("%s: body decoded to %d bytes, want the %d-byte page", enc, len(res.Body), len(page))
		}
		if res.Header.Get("Content-Encoding") != "" && enc != "identity" {
			t.Errorf("%s: Content-Encoding still set after decoding", enc)
		}
	}
	if a, _ := gotAccept.Load().(string); a != "gzip, deflate, br" {
		t.Errorf("Accept-Encoding = %q", a)
	}
	// Unknown encodings are an error, not garbage.
	bad := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "zstd-or-something")
		w.Write([]byte("???"))
	})
	_, err := get(t, d, bad.URL)
	if err == nil || !strings.Contains(err.Error(), "zstd-or-something") {
		t.Errorf("unknown encoding: err = %v", err)
	}
}

func TestWarnSizeLogs(t *testing.T) {
	// 64 chunks, each flushed: the body arrives in many reads past the
	// threshold, and the warning is still logged once.
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		for range 64 {
			w.Write(make([]byte, 4<<10))
			w.(http.Flusher).Flush()
		}
	})
	var logs syncbuf.Buffer
	d := newTestDownloader(t, Options{WarnSize: 4 << 10, Log: zerolog.New(&logs)})
	if _, err := get(t, d, srv.URL); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "DOWNLOAD_WARNSIZE") || !strings.Contains(out, srv.URL) || !strings.Contains(out, `"bytes_so_far":`) {
		t.Errorf("no size warning logged: %q", out)
	}
	if n := strings.Count(out, "DOWNLOAD_WARNSIZE"); n != 1 {
		t.Errorf("size warning logged %d times for one response, want once: %q", n, out)
	}
	logs.Reset()
	req := spider.MustRequest(srv.URL, nil).Set(MetaDownloadWarnSize, 1<<20)
	if _, err := d.Fetch(context.Background(), req); err != nil || logs.String() != "" {
		t.Errorf("download_warnsize meta not honoured: %v %q", err, logs.String())
	}
}

// truncatedServer announces 1000 bytes and sends 100.
func truncatedServer(t *testing.T) *httptest.Server {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n")
		buf.WriteString(strings.Repeat("a", 100))
		buf.Flush()
	})
}

func TestDataLoss(t *testing.T) {
	srv := truncatedServer(t)
	_, err := get(t, newTestDownloader(t, Options{FailOnDataLoss: true}), srv.URL)
	wantKind(t, err, errkind.ResponseDataLoss)

	res, err := get(t, newTestDownloader(t, Options{FailOnDataLoss: false}), srv.URL)
	if err != nil {
		t.Fatalf("DOWNLOAD_FAIL_ON_DATALOSS=false: %v", err)
	}
	if len(res.Body) != 100 || len(res.Flags) != 1 || res.Flags[0] != "truncated" {
		t.Errorf("got %d bytes, flags %v; want the 100 bytes flagged truncated", len(res.Body), res.Flags)
	}
	// The meta overrides the setting.
	req := spider.MustRequest(srv.URL, nil).Set(MetaDownloadFailOnDataLoss, true)
	_, err = newTestDownloader(t, Options{FailOnDataLoss: false}).Fetch(context.Background(), req)
	wantKind(t, err, errkind.ResponseDataLoss)
}

func TestConnectionRefusedAndReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/"
	ln.Close()
	d := newTestDownloader(t, Options{})
	_, err = get(t, d, refused)
	wantKind(t, err, errkind.DownloadFailed)

	reset := serve(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.(*net.TCPConn).SetLinger(0) // close with RST
		conn.Close()
	})
	_, err = get(t, d, reset.URL)
	wantKind(t, err, errkind.DownloadFailed)

	// Reset in the middle of the body (no Content-Length): failed, not data loss.
	midBody := serve(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		buf.Flush()
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	})
	_, err = get(t, d, midBody.URL)
	if !errors.Is(err, errkind.DownloadFailed) && !errors.Is(err, errkind.ResponseDataLoss) {
		t.Errorf("reset mid-body: err = %v", err)
	}
}

func TestHTTP2Negotiated(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<p>%s</p>", r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted-certificate case logs a handshake error
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	d := newTestDownloader(t, Options{TLSConfig: &tls.Config{RootCAs: pool}})
	res, err := get(t, d, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if res.Protocol != "HTTP/2.0" || string(res.Body) != "<p>HTTP/2.0</p>" {
		t.Errorf("protocol %q, body %q; want HTTP/2.0", res.Protocol, res.Body)
	}
	// Without trusting the certificate, the TLS failure is a download failure.
	_, err = get(t, newTestDownloader(t, Options{}), srv.URL)
	wantKind(t, err, errkind.DownloadFailed)
}

func TestConnectionReuse(t *testing.T) {
	var newConns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("r"), 2000))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	d := newTestDownloader(t, Options{MaxConns: 8, MaxConnsPerHost: 8})
	for i := range 50 {
		if _, err := get(t, d, fmt.Sprintf("%s/%d", srv.URL, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := newConns.Load(); n != 1 {
		t.Errorf("50 sequential requests opened %d connections, want 1", n)
	}
	newConns.Store(0)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				if _, err := get(t, d, fmt.Sprintf("%s/%d/%d", srv.URL, w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// net/http may dial a spare connection when a request starts just before
	// another returns its connection to the pool; without reuse this would
	// be 200.
	if n := newConns.Load(); n > 12 {
		t.Errorf("8 workers x 25 requests opened %d new connections, want about 8 (idle pool sized to the concurrency)", n)
	}
}

func TestRequestIsSentAsDescribed(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Method+" "+r.Header.Get("X-Test")+" "+string(body))
		w.WriteHeader(http.StatusTeapot)
	})
	req := spider.MustRequest(srv.URL+"/post?q=1", nil)
	req.Method = http.MethodPost
	req.Header = http.Header{"X-Test": {"yes"}}
	req.Body = []byte("payload")
	res, err := newTestDownloader(t, Options{}).Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusTeapot || res.Header.Get("X-Echo") != "POST yes payload" {
		t.Errorf("status %d, echo %q", res.Status, res.Header.Get("X-Echo"))
	}
	if res.Request != req || res.URL.String() != req.URL.String() {
		t.Error("response does not point back to its request")
	}
	// The Referer field is sent as the header; a Referer in Header wins.
	echoRef := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Referers"] = r.Header.Values("Referer")
	})
	for _, tt := range []struct {
		field, header string
		want          []string
	}{
		{"", "", nil},
		{"http://from.example/a", "", []string{"http://from.example/a"}},
		{"http://from.example/a", "http://mine.example/", []string{"http://mine.example/"}},
	} {
		r := spider.MustRequest(echoRef.URL, nil)
		r.Referer = tt.field
		if tt.header != "" {
			r.Header = http.Header{"Referer": {tt.header}}
		}
		res, err := newTestDownloader(t, Options{}).Fetch(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Header.Values("X-Referers"); !slices.Equal(got, tt.want) {
			t.Errorf("field %q, header %q: sent %q, want %q", tt.field, tt.header, got, tt.want)
		}
	}
	// Redirects are responses, for the redirect middleware to follow.
	redir := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) })
	res, err = get(t, newTestDownloader(t, Options{}), redir.URL)
	if err != nil || res.Status != http.StatusFound || res.Header.Get("Location") != "/elsewhere" {
		t.Errorf("redirect: %v %v", res, err)
	}
}

func TestInvalidProxyMeta(t *testing.T) {
	req := spider.MustRequest("http://127.0.0.1:1/", nil).Set(MetaProxy, "http://[bad")
	_, err := newTestDownloader(t, Options{}).Fetch(context.Background(), req)
	wantKind(t, err, errkind.DownloadFailed)
	if !strings.Contains(err.Error(), "proxy") {
		t.Errorf("error %q does not mention the proxy meta", err)
	}
}
