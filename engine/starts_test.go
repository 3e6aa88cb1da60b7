package engine

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/spider"
)

// seedsSpider yields behind start requests of one host, then one seed of
// each of hosts, then more of the first host (up to a million), counting
// how many were produced.
type seedsSpider struct {
	*urlsSpider
	behind   int
	hosts    []string
	produced atomic.Int64
}

func (s *seedsSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		emit := func(u string) bool {
			s.produced.Add(1)
			return yield(spider.NewRequest(u, nil))
		}
		for i := range s.behind {
			if !emit(fmt.Sprintf("http://busy.test/p/%d", i)) {
				return
			}
		}
		for _, h := range s.hosts {
			if !emit("http://" + h + "/") {
				return
			}
		}
		for i := s.behind; i < 1_000_000; i++ {
			if !emit(fmt.Sprintf("http://busy.test/p/%d", i)) {
				return
			}
		}
	}
}

// Seeds of idle hosts do not wait behind a queue full of requests waiting
// out their host's delay: with one host's 2,000 requests first (DOWNLOAD_
// DELAY 10 s, so all but one wait) and the fake clock never advanced, the
// three seeds behind them are still sent at once. Start requests are still
// pulled lazily: the queue grows to its cap, not to the million.
func TestSeedsDoNotWaitBehindThrottledRequests(t *testing.T) {
	checkGoroutines(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, pageHTML(0)) }))
	obs := &sendTimes{stamps: map[string][]time.Time{}}
	hosts := []string{"a.test", "b.test", "c.test"}
	sp := &seedsSpider{urlsSpider: newURLsSpider(), behind: 2000, hosts: hosts}
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 4, "DOWNLOAD_DELAY", 10.0, "RANDOMIZE_DOWNLOAD_DELAY", false),
		Options{Clock: clk, Transport: hostTransport(t, srv.Listener.Addr().String()), Observers: []Observer{obs}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := e.Run(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	seen := func() int {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		n := 0
		for _, h := range hosts {
			if len(obs.stamps[h]) > 0 {
				n++
			}
		}
		return n
	}
	// A hang guard, not a timing assert: the fake clock never moves.
	deadline := time.Now().Add(20 * time.Second)
	for seen() < len(hosts) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	e.Stop("test")
	<-done
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, h := range hosts {
		ts := obs.stamps[h]
		if len(ts) == 0 {
			t.Errorf("seed of idle host %s never sent (busy.test's requests ahead of it wait for the clock)", h)
			continue
		}
		if !ts[0].Equal(t0) {
			t.Errorf("seed of %s sent at +%v, want at once", h, ts[0].Sub(t0))
		}
	}
	if n := len(obs.stamps["busy.test"]); n != 1 {
		t.Errorf("busy.test: %d requests sent, want 1 (DOWNLOAD_DELAY holds the rest)", n)
	}
	lowWater := max(4*4, 256)
	if got, bound := sp.produced.Load(), int64(startsCapFactor*lowWater+lowWater); got > bound {
		t.Errorf("%d start requests materialised, want at most %d (the starved queue's cap)", got, bound)
	}
}
