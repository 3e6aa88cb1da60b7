package downloader

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// The wire report of a request whose dial is slow (here: it waits for a
// place in the connection budget) comes after the dial, not at the start
// of the fetch; on a reused connection it comes too.
func TestWireReportedAfterSlowDial(t *testing.T) {
	hold := make(chan struct{})
	entered := make(chan struct{}, 1)
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-hold
	}))
	defer busy.Close()
	other, target := newAcceptServer(t), newAcceptServer(t)

	// Budget 2, concurrency 1: at most one idle connection.
	d := newTestDownloader(t, Options{MaxConns: 1, MaxOpenConns: 2})
	busyDone := make(chan error, 1)
	go func() {
		_, err := d.Fetch(context.Background(), spider.MustRequest(busy.URL+"/", nil))
		busyDone <- err
	}()
	<-entered
	mustGet(t, d, other.URL+"/") // the budget is full: one busy, one idle

	var wired atomic.Int32
	released := atomic.Bool{}
	var wiredBeforeRelease atomic.Bool
	ctx := WithWire(context.Background(), func() {
		if !released.Load() {
			wiredBeforeRelease.Store(true)
		}
		wired.Add(1)
	})
	done := make(chan error, 1)
	go func() {
		_, err := d.Fetch(ctx, spider.MustRequest(target.URL+"/", nil))
		done <- err
	}()
	for d.ConnStats().Waits == 0 { // the dial is waiting for a place
		time.Sleep(time.Millisecond)
	}
	if wired.Load() != 0 {
		t.Fatal("wire reported while the dial was still waiting")
	}
	released.Store(true)
	close(hold) // the busy request completes; the idle connection beyond the limit closes
	if err := <-busyDone; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if wiredBeforeRelease.Load() || wired.Load() != 1 {
		t.Errorf("wire reported %d times, before the dial: %v; want once, after", wired.Load(), wiredBeforeRelease.Load())
	}
	// Reused connection: reported once more, same connection.
	if _, err := d.Fetch(ctx, spider.MustRequest(target.URL+"/", nil)); err != nil {
		t.Fatal(err)
	}
	if wired.Load() != 2 || target.accepts.Load() != 1 {
		t.Errorf("after a reused fetch: %d wire reports, %d accepts; want 2 and 1", wired.Load(), target.accepts.Load())
	}
}

// Over TLS the wire report comes once per request too: on HTTP/1.1 after
// the TLS record that carries the request is written, on HTTP/2 when
// net/http reports the request written.
func TestWireReportedOverTLS(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, r.Proto)
		}))
		srv.EnableHTTP2 = h2
		srv.StartTLS()
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		d := newTestDownloader(t, Options{TLSConfig: &tls.Config{RootCAs: pool}})
		want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2]
		for i := range 3 {
			var wired atomic.Int32
			ctx := WithWire(context.Background(), func() { wired.Add(1) })
			res, err := d.Fetch(ctx, spider.MustRequest(fmt.Sprintf("%s/%d", srv.URL, i), nil))
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Body) != want || wired.Load() != 1 {
				t.Errorf("%s request %d: protocol %q, %d wire reports; want %s and 1", want, i, res.Body, wired.Load(), want)
			}
		}
		srv.Close()
	}
}
