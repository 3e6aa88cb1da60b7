package scheduler_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/devtools/syncbuf"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Head-of-line blocking, end to end: host S has a 0.2 s delay and 20
// queued requests ahead of host F's 200 requests (no delay), with 8
// global slots. With the throttling-aware scheduler F must not wait for
// S's delay; engine-gated, S's requests hold every slot while they wait
// for S's delay, and F starts only when S's queue is nearly drained.
const (
	holSlowN     = 20
	holSlowDelay = 200 * time.Millisecond
	holFastN     = 200
	holFastTime  = 20 * time.Millisecond // F's response time (real time)
	holSlots     = 8
)

var holT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// holArrival is a request reaching S's or F's server.
type holArrival struct {
	slow bool
	at   time.Time // on the crawl's clock
}

// holSites are S's and F's servers, recording arrivals in order.
type holSites struct {
	slow, fast *httptest.Server
	now        func() time.Time
	mu         sync.Mutex
	arrivals   []holArrival
}

func newHOLSites(t testing.TB, now func() time.Time) *holSites {
	h := &holSites{now: now}
	page := func(slow bool, d time.Duration) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			h.mu.Lock()
			h.arrivals = append(h.arrivals, holArrival{slow: slow, at: h.now()})
			h.mu.Unlock()
			time.Sleep(d)
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>ok</body></html>")
		}
	}
	h.slow = httptest.NewServer(page(true, 0))
	t.Cleanup(h.slow.Close)
	h.fast = httptest.NewServer(page(false, holFastTime))
	t.Cleanup(h.fast.Close)
	return h
}

// counts returns how many requests reached S and F, and how many reached
// S before F's first one (all of them when F got none).
func (h *holSites) counts() (slow, fast, slowBeforeFast int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.arrivals {
		switch {
		case a.slow:
			slow++
			if fast == 0 {
				slowBeforeFast++
			}
		default:
			fast++
		}
	}
	return slow, fast, slowBeforeFast
}

// firstFast returns when F's first request arrived.
func (h *holSites) firstFast() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.arrivals {
		if !a.slow {
			return a.at, true
		}
	}
	return time.Time{}, false
}

type holSpider struct {
	spider.Base
	fastHost string
	stop     func()
	now      func() time.Time
	start    time.Time
	fastDone atomic.Int64
	mu       sync.Mutex
	fastEnd  time.Duration
}

func (*holSpider) Name() string { return "hol" }

func (s *holSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	if res.Request.Host() != s.fastHost {
		return nil
	}
	if s.fastDone.Add(1) == holFastN {
		s.mu.Lock()
		s.fastEnd = s.now().Sub(s.start)
		s.mu.Unlock()
		s.stop() // S's remaining queue is not what we measure
	}
	return nil
}

// holCrawl is one crawl of F's requests, queued behind S's when withSlow.
type holCrawl struct {
	e    *engine.Engine
	sp   *holSpider
	logs *syncbuf.Buffer
	done chan error // Run's error, when it returns
}

// startHOL starts a crawl with scheduler sched on clk and returns at once.
func startHOL(t testing.TB, sched string, withSlow bool, sites *holSites, clk clock.Clock) *holCrawl {
	t.Helper()
	sHost, fHost := spider.MustRequest(sites.slow.URL, nil).Host(), spider.MustRequest(sites.fast.URL, nil).Host()
	s := settings.New()
	err := s.SetMap(map[string]any{
		// The clock may stand still: no rate controller (its start ramp
		// paces a new scope's first requests).
		"THROTTLING_RATE_CONTROL":         false,
		"SCHEDULER":                       sched,
		"ROBOTSTXT_OBEY":                  false,
		"CONCURRENT_REQUESTS":             holSlots,
		"DELAYED_REQUESTS_WARN_THRESHOLD": 6,
		"THROTTLING_SCOPES": map[string]any{
			sHost: map[string]any{"delay": holSlowDelay.Seconds(), "jitter": 0, "concurrency": 8},
			fHost: map[string]any{"delay": 0, "concurrency": 8},
		},
	}, settings.SourceCommandLine, "test")
	if err != nil {
		t.Fatal(err)
	}
	sp := &holSpider{fastHost: fHost, now: clk.Now}
	if withSlow {
		for i := range holSlowN {
			sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/s/%d", sites.slow.URL, i))
		}
	}
	for i := range holFastN {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/f/%d", sites.fast.URL, i))
	}
	c := &holCrawl{sp: sp, logs: &syncbuf.Buffer{}, done: make(chan error, 1)}
	c.e, err = engine.New(sp, s, engine.Options{Clock: clk, Log: zerolog.New(c.logs).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	sp.stop = func() { c.e.Stop("fast_done") }
	sp.start = clk.Now()
	go func() {
		_, err := c.e.Run(context.Background())
		c.done <- err
	}()
	return c
}

// holDeadline bounds, in real time, each wait of these tests for
// something that takes well under a second on an idle machine.
const holDeadline = 30 * time.Second

// finish waits for the crawl to end, advancing fc in 10 ms steps when it
// is not nil, and fails the test after holDeadline.
func (c *holCrawl) finish(t *testing.T, fc *clock.Fake) {
	t.Helper()
	deadline := time.After(holDeadline)
	for {
		var tick <-chan time.Time
		if fc != nil {
			tick = time.After(200 * time.Microsecond)
		}
		select {
		case err := <-c.done:
			if err != nil {
				t.Fatal(err)
			}
			return
		case <-tick:
			fc.Advance(10 * time.Millisecond)
		case <-deadline:
			c.abort(fc)
			t.Fatalf("crawl not finished after %v (real time)", holDeadline)
		}
	}
}

// abort ends a crawl that a failed test gives up on.
func (c *holCrawl) abort(fc *clock.Fake) {
	c.e.Abort()
	for {
		select {
		case <-c.done:
			return
		case <-time.After(time.Millisecond):
			if fc != nil {
				fc.Advance(time.Second)
			}
		}
	}
}

// With the throttling-aware scheduler, F's 200 requests all complete while
// the crawl's (fake) clock stands still at t0. Since S's delay can never
// elapse, exactly one of S's requests is sent, and every one of F's is
// sent without waiting for S: had F waited behind S's delayed requests
// (head-of-line blocking), it would need the clock to move, and the crawl
// would not finish (the test fails after holDeadline of real time). No
// assertion depends on how fast the machine is.
func TestHeadOfLineThrottlingAware(t *testing.T) {
	fc := clock.NewFake(holT0)
	sites := newHOLSites(t, fc.Now)
	c := startHOL(t, scheduler.ThrottlingAware, true, sites, fc)
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(holDeadline):
		c.abort(fc)
		slow, fast, _ := sites.counts()
		t.Fatalf("throttling-aware: with the clock stopped, %d of F's %d requests sent (and %d of S's) after %v: F waits for S's delay",
			fast, holFastN, slow, holDeadline)
	}
	slow, fast, _ := sites.counts()
	if n := c.sp.fastDone.Load(); n != holFastN || fast != holFastN {
		t.Fatalf("throttling-aware: %d of %d fast responses (%d requests)", n, holFastN, fast)
	}
	if slow != 1 {
		t.Fatalf("throttling-aware: %d of S's requests sent with the clock stopped, want exactly 1 (S's delay is %v)", slow, holSlowDelay)
	}
	if now := fc.Now(); !now.Equal(holT0) {
		t.Fatalf("the clock moved to %v", now)
	}
	if logs := c.logs.String(); strings.Contains(logs, "held back") {
		t.Errorf("throttling-aware: delayed-requests warning logged, but no request waits in a slot; log:\n%s", logs)
	}
}

// Engine-gated, the same crawl blocks F behind S: S's first 8 requests
// take the 8 global slots and wait there for S's delay. While the clock
// stands still that state is stable (8 admissions waiting on fake-clock
// timers, none of F's requests sent), and the DELAYED_REQUESTS_WARN_THRESHOLD
// warning suggests the throttling-aware scheduler. Once the clock moves,
// the queue drains in order: F's first request can only take the slot
// freed by S's 13th (after S's 12th has taken the last queued S request),
// so at least holSlowN-holSlots+1 of S's requests reach S before F's first
// one, and it arrives no earlier than 12 of S's delays after t0. Both are
// orderings and lower bounds, whatever the machine's speed. If the plain
// scheduler stopped making F wait (or this setup stopped showing
// head-of-line blocking), F would be sent while the clock stands still.
func TestHeadOfLineEngineGated(t *testing.T) {
	fc := clock.NewFake(holT0)
	sites := newHOLSites(t, fc.Now)
	c := startHOL(t, scheduler.EngineGated, true, sites, fc)
	deadline := time.Now().Add(holDeadline)
	for fc.Pending() < holSlots {
		if time.Now().After(deadline) {
			c.abort(fc)
			slow, fast, _ := sites.counts()
			t.Fatalf("engine-gated: %d requests waiting for admission after %v, want %d (S: %d sent, F: %d sent)",
				fc.Pending(), holDeadline, holSlots, slow, fast)
		}
		time.Sleep(time.Millisecond)
	}
	if slow, fast, _ := sites.counts(); slow != 1 || fast != 0 {
		t.Fatalf("engine-gated, clock stopped, %d slots waiting: %d of S's and %d of F's requests sent, want 1 and 0",
			fc.Pending(), slow, fast)
	}

	c.finish(t, fc)
	if n := c.sp.fastDone.Load(); n != holFastN {
		t.Fatalf("engine-gated: %d of %d fast responses", n, holFastN)
	}
	_, _, before := sites.counts()
	if want := holSlowN - holSlots + 1; before < want {
		t.Errorf("engine-gated: %d of S's requests reached S before F's first one, want at least %d (head-of-line blocking)", before, want)
	}
	first, _ := sites.firstFast()
	if least := time.Duration(holSlowN-holSlots) * holSlowDelay; first.Sub(holT0) < least {
		t.Errorf("engine-gated: F's first request at t0+%v, want at least t0+%v", first.Sub(holT0), least)
	}
	if logs := c.logs.String(); !strings.Contains(logs, "ThrottlingAwareScheduler") {
		t.Errorf("engine-gated: no DELAYED_REQUESTS_WARN_THRESHOLD warning suggesting the throttling-aware scheduler; log:\n%s", logs)
	}
}

// BenchmarkHeadOfLineBlocking is the wall-clock form of the two tests
// above: F's time to finish alone, behind S with the throttling-aware
// scheduler, and behind S engine-gated, on the real clock. It reports the
// two ratios (aware/alone, about 1; gated/alone, several times more);
// they depend on the machine's load, so they are measured here, not
// asserted. Run with -benchtime=1x: one iteration is three crawls (about
// 5 s).
func BenchmarkHeadOfLineBlocking(b *testing.B) {
	var alone, aware, gated time.Duration
	for b.Loop() {
		sites := newHOLSites(b, time.Now)
		run := func(sched string, withSlow bool) time.Duration {
			c := startHOL(b, sched, withSlow, sites, clock.Real)
			if err := <-c.done; err != nil {
				b.Fatal(err)
			}
			if n := c.sp.fastDone.Load(); n != holFastN {
				b.Fatalf("%s: %d of %d fast responses", sched, n, holFastN)
			}
			return c.sp.fastEnd
		}
		alone += run(scheduler.ThrottlingAware, false)
		aware += run(scheduler.ThrottlingAware, true)
		gated += run(scheduler.EngineGated, true)
	}
	b.ReportMetric(aware.Seconds()/alone.Seconds(), "aware/alone")
	b.ReportMetric(gated.Seconds()/alone.Seconds(), "gated/alone")
}
