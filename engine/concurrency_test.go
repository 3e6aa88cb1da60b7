package engine

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

func TestGlobalConcurrencyLimit(t *testing.T) {
	checkGoroutines(t)
	for _, limit := range []int{1, 3, 8} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			g := newGauge()
			srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				g.enter("all")
				defer g.leave("all")
				g.waitUntilKey("all", limit+1) // ask for more than allowed
				fmt.Fprint(w, pageHTML(0))
			}))
			sp := newURLsSpider(urlsOf(srv.URL, 20)...)
			e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", limit, "CONCURRENT_REQUESTS_PER_DOMAIN", 0, "CONCURRENT_REQUESTS_PER_IP", 0), Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			peak, total := g.stats("all")
			if peak != limit {
				t.Errorf("server saw at most %d requests at once, want exactly CONCURRENT_REQUESTS = %d", peak, limit)
			}
			if total != 20 || sp.count() != 20 {
				t.Errorf("server saw %d requests, spider parsed %d pages; want 20", total, sp.count())
			}
			if got := res.Stats["engine/peak_inflight"]; int(got) > limit {
				t.Errorf("engine/peak_inflight = %v > %d", got, limit)
			}
		})
	}
}

func TestPerDomainConcurrency(t *testing.T) {
	checkGoroutines(t)
	g := newGauge()
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.enter(r.Host)
		defer g.leave(r.Host)
		g.enter("all")
		defer g.leave("all")
		g.waitUntilKey(r.Host, 3)
		fmt.Fprint(w, pageHTML(0))
	}))
	hosts := []string{"a.test", "b.test", "c.test"}
	var urls []string
	for _, h := range hosts {
		for i := range 12 {
			urls = append(urls, fmt.Sprintf("http://%s/p/%d", h, i))
		}
	}
	sp := newURLsSpider(urls...)
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 16, "CONCURRENT_REQUESTS_PER_DOMAIN", 2),
		Options{Transport: hostTransport(t, srv.Listener.Addr().String())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if peak, _ := g.stats(h); peak != 2 {
			t.Errorf("host %s: peak %d requests at once, want CONCURRENT_REQUESTS_PER_DOMAIN = 2", h, peak)
		}
	}
	peak, total := g.stats("all")
	if peak < 4 {
		t.Errorf("peak over all hosts %d: hosts were not crawled in parallel", peak)
	}
	if total != len(urls) {
		t.Errorf("server saw %d requests, want %d", total, len(urls))
	}
}

// sendTimes is an Observer recording when each request was admitted.
type sendTimes struct {
	mu     sync.Mutex
	stamps map[string][]time.Time
}

func (o *sendTimes) RequestStarted(now time.Time, req *spider.Request, _ throttling.Scopes) {
	o.mu.Lock()
	o.stamps[req.Host()] = append(o.stamps[req.Host()], now)
	o.mu.Unlock()
}

func (o *sendTimes) RequestFinished(time.Time, *spider.Request, throttling.Scopes, *spider.Response, error) {
}

// TestDownloadDelayPerDomain runs on a fake clock: the gaps between the
// sends to one host must be at least DOWNLOAD_DELAY, while different hosts
// proceed in parallel; the server checks every request arrived.
func TestDownloadDelayPerDomain(t *testing.T) {
	checkGoroutines(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	g := newGauge()
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.enter(r.Host)
		g.leave(r.Host)
		fmt.Fprint(w, pageHTML(0))
	}))
	obs := &sendTimes{stamps: map[string][]time.Time{}}
	var urls []string
	for i := range 4 {
		for _, h := range []string{"a.test", "b.test"} {
			urls = append(urls, fmt.Sprintf("http://%s/p/%d", h, i))
		}
	}
	sp := newURLsSpider(urls...)
	e, err := New(sp, testSettings(t, "DOWNLOAD_DELAY", 2.0, "RANDOMIZE_DOWNLOAD_DELAY", false),
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
	// Move fake time forward in small steps until the crawl ends (the crawl
	// needs about 6 s of fake time; a minute of it means it is stuck).
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			if clk.Now().Sub(t0) > time.Minute {
				e.Abort()
				<-done
				t.Fatalf("the crawl has not finished after %v of fake time", clk.Now().Sub(t0))
			}
			clk.Advance(50 * time.Millisecond)
			time.Sleep(200 * time.Microsecond)
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	stamps := obs.stamps
	for _, h := range []string{"a.test", "b.test"} {
		ts := stamps[h]
		if _, total := g.stats(h); len(ts) != 4 || total != 4 {
			t.Fatalf("host %s: %d requests sent, %d received, want 4", h, len(ts), total)
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap < 2*time.Second {
				t.Errorf("host %s: requests %d and %d only %v apart, want >= DOWNLOAD_DELAY 2s", h, i-1, i, gap)
			}
		}
	}
	// Per-domain, not global: b's first request did not wait for a's last.
	if !stamps["b.test"][0].Before(stamps["a.test"][3]) {
		t.Errorf("hosts were delayed globally: a=%v b=%v", stamps["a.test"], stamps["b.test"])
	}
}

// concurrentSpider's callbacks wait for each other, so they must overlap.
type concurrentSpider struct {
	spider.Base
	mu       sync.Mutex
	cur      int
	peak     int
	seen     map[string]bool
	pageURLs []string
}

func (*concurrentSpider) Name() string { return "concurrent" }

func (s *concurrentSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.mu.Lock()
	s.cur++
	s.peak = max(s.peak, s.cur)
	s.seen[res.URL.Path] = true // shared state, guarded: -race checks the engine adds no races of its own
	s.mu.Unlock()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		c := s.cur
		s.mu.Unlock()
		if c >= 4 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if doc, err := res.Doc(); err == nil {
		out.FollowAll(res, doc.Find("a"), s.Parse)
		out.Item(map[string]any{"path": res.URL.Path, "title": strings.TrimSpace(doc.Find("title").Text())})
	}
	s.mu.Lock()
	s.cur--
	s.mu.Unlock()
	return nil
}

func TestCallbacksRunConcurrently(t *testing.T) {
	checkGoroutines(t)
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscanf(r.URL.Path, "/p/%d", &i)
		var links []string
		for _, c := range []int{3*i + 1, 3*i + 2, 3*i + 3} {
			if c < 40 {
				links = append(links, fmt.Sprintf("/p/%d", c))
			}
		}
		fmt.Fprint(w, pageHTML(i, links...))
	}))
	sp := &concurrentSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/p/0"}}, seen: map[string]bool{}}
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 8), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sp.peak < 4 {
		t.Errorf("at most %d callbacks ran at once, want >= 4", sp.peak)
	}
	if len(sp.seen) != 40 || res.Stats["item_scraped_count"] != 40 {
		t.Errorf("parsed %d pages, %v items; want 40", len(sp.seen), res.Stats["item_scraped_count"])
	}
}

// A job's global slot is free once its download is over, while its
// callback still runs: at CONCURRENT_REQUESTS 1, the k-th callback waits
// for the k+1-th request to reach the server.
func TestSlotFreedBeforeCallbackEnds(t *testing.T) {
	checkGoroutines(t)
	const n = 5
	var arrivals, callbacks, overlapped atomic.Int64
	reached := make([]chan struct{}, n+2)
	for i := range reached {
		reached[i] = make(chan struct{})
	}
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := arrivals.Add(1); k <= n {
			close(reached[k])
		}
		fmt.Fprint(w, pageHTML(0))
	}))
	sp := newURLsSpider(urlsOf(srv.URL, n)...)
	sp.onPage = func(ctx context.Context, res *spider.Response) error {
		k := callbacks.Add(1)
		if k == n {
			return nil // the last page: nothing else to send
		}
		select {
		case <-reached[k+1]:
			overlapped.Add(1)
		case <-time.After(10 * time.Second):
			t.Errorf("callback %d: no other request sent while it ran (the slot is held until the callback ends)", k)
		}
		return nil
	}
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := overlapped.Load(); got != n-1 {
		t.Errorf("%d callbacks saw the next request while they ran, want %d", got, n-1)
	}
}

// concurrentOutputSpider's start page writes its links to the Output from
// several goroutines at once (spider.Output is safe for concurrent use).
type concurrentOutputSpider struct {
	spider.Base
	base    string
	mu      sync.Mutex
	fetched map[string]bool
}

func (s *concurrentOutputSpider) Name() string { return "concurrent-output" }

func (s *concurrentOutputSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.mu.Lock()
	s.fetched[res.URL.Path] = true
	s.mu.Unlock()
	if res.URL.Path != "/" {
		return nil
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				req, err := spider.NewRequest(fmt.Sprintf("%s/g%d/%d", s.base, g, i), nil)
				if err != nil {
					panic(err)
				}
				out.Request(req)
				if i%10 == 0 {
					out.Item(map[string]any{"g": g, "i": i})
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// Every request written from several goroutines of one callback is
// crawled, once.
func TestOutputConcurrentRequests(t *testing.T) {
	checkGoroutines(t)
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, pageHTML(0)) }))
	sp := &concurrentOutputSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/"}}, base: srv.URL, fetched: map[string]bool{}}
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 8), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.fetched) != 201 {
		t.Errorf("%d pages fetched, want 201 (the start page and 4 × 50 links)", len(sp.fetched))
	}
	if got := res.Stats["item_scraped_count"]; got != 20 {
		t.Errorf("%v items, want 20", got)
	}
}
