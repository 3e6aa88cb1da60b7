package engine

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/spider"
)

// ADAPTIVE_GOMAXPROCS: a crawl that uses a sliver of the CPU (the
// governor's time is a fake clock here, a second per page) runs with
// fewer Ps after a few of the governor's windows, and GOMAXPROCS has its
// value back when the crawl ends; with the setting off it is never
// touched.
func TestAdaptiveGOMAXPROCS(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // the governor stands aside when it is set
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skip("one P: nothing to adapt")
	}
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, pageHTML(0)) }))
	for _, adaptive := range []bool{true, false} {
		t.Run(fmt.Sprint("ADAPTIVE_GOMAXPROCS=", adaptive), func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			sp := newURLsSpider(urlsOf("http://a.test", 20)...)
			var mu sync.Mutex
			var seen []int
			sp.onPage = func(context.Context, *spider.Response) error {
				mu.Lock()
				seen = append(seen, runtime.GOMAXPROCS(0))
				mu.Unlock()
				clk.Advance(time.Second)
				return nil
			}
			e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 1, "ADAPTIVE_GOMAXPROCS", adaptive),
				Options{Clock: clk, Transport: hostTransport(t, srv.Listener.Addr().String())})
			if err != nil {
				t.Fatal(err)
			}
			e.procsNow = clk.Now // the governor's windows, on the fake clock here
			if _, err := e.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := runtime.GOMAXPROCS(0); got != before {
				t.Errorf("GOMAXPROCS %d after the crawl, want %d back", got, before)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 20 {
				t.Fatalf("%d pages, want 20", len(seen))
			}
			last := seen[len(seen)-1]
			switch {
			case adaptive && last >= before:
				t.Errorf("GOMAXPROCS by page: %v; want fewer than %d Ps after %d windows of a crawl that waits", seen, before, len(seen))
			case !adaptive && last != before:
				t.Errorf("GOMAXPROCS by page: %v with ADAPTIVE_GOMAXPROCS off, want %d throughout", seen, before)
			}
		})
	}
}
