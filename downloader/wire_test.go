package downloader

import (
	"context"
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
