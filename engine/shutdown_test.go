package engine

import (
	"container/list"
	"context"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/spider"
)

// blockingSite holds every request until release is closed (or the
// request's context ends) and counts arrivals and cancellations.
type blockingSite struct {
	release   chan struct{}
	arrived   atomic.Int64
	cancelled atomic.Int64
	completed atomic.Int64
}

func newBlockingSite(t *testing.T) (*blockingSite, string) {
	b := &blockingSite{release: make(chan struct{})}
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.arrived.Add(1)
		select {
		case <-b.release:
			b.completed.Add(1)
			fmt.Fprint(w, pageHTML(0))
		case <-r.Context().Done():
			b.cancelled.Add(1)
		}
	}))
	t.Cleanup(b.open) // never leave handlers hanging
	return b, srv.URL
}

func (b *blockingSite) open() {
	select {
	case <-b.release:
	default:
		close(b.release)
	}
}

type runResult struct {
	res *Result
	err error
}

func runAsync(e *Engine, ctx context.Context) <-chan runResult {
	ch := make(chan runResult, 1)
	go func() {
		res, err := e.Run(ctx)
		ch <- runResult{res, err}
	}()
	return ch
}

func TestStopLetsInFlightRequestsFinish(t *testing.T) {
	checkGoroutines(t)
	for _, tc := range []struct {
		name      string
		scheduler string
		perDomain int
		inFlight  int64
		waiting   int64 // jobs holding a slot while they wait for admission
	}{
		// 4 slots, all downloading when Stop comes.
		{"slots full", "ThrottlingAwareScheduler", 0, 4, 0},
		// 1 request downloading; the others wait in the scheduler.
		{"throttling-aware, domain busy", "ThrottlingAwareScheduler", 1, 1, 0},
		// 1 request downloading, 3 jobs holding slots while they wait for
		// the domain: those have not started and must not start.
		{"engine-gated, jobs waiting for admission", "Scheduler", 1, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site, base := newBlockingSite(t)
			// A host name, so that CONCURRENT_REQUESTS_PER_DOMAIN applies
			// (127.0.0.1 would be an IP scope).
			tr := hostTransport(t, strings.TrimPrefix(base, "http://"))
			sp := newURLsSpider(urlsOf("http://site.test", 20)...)
			e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 4, "CONCURRENT_REQUESTS_PER_DOMAIN", tc.perDomain, "SCHEDULER", tc.scheduler), Options{Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			done := runAsync(e, context.Background())
			waitFor(t, "requests in flight", func() bool { return site.arrived.Load() == tc.inFlight })
			if tc.waiting > 0 {
				waitFor(t, "jobs waiting for admission", func() bool { return e.waitingAdmission.Load() == tc.waiting })
			}
			e.Stop("test_stop")
			e.Stop("ignored") // later calls are ignored
			site.open()
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.res.Reason != "test_stop" {
				t.Errorf("reason = %q, want test_stop", r.res.Reason)
			}
			if got := site.arrived.Load(); got != tc.inFlight {
				t.Errorf("server saw %d requests, want the %d in flight at Stop and no new one", got, tc.inFlight)
			}
			if got := sp.count(); int64(got) != tc.inFlight {
				t.Errorf("%d callbacks ran, want %d (in-flight requests finish, callbacks included)", got, tc.inFlight)
			}
		})
	}
}

func TestContextCancelIsAGracefulShutdown(t *testing.T) {
	checkGoroutines(t)
	site, base := newBlockingSite(t)
	sp := newURLsSpider(urlsOf(base, 10)...)
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(e, ctx)
	waitFor(t, "requests in flight", func() bool { return site.arrived.Load() == 2 })
	cancel()
	site.open()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.Reason != "shutdown" || sp.count() != 2 || site.completed.Load() != 2 {
		t.Errorf("reason %q, %d callbacks, %d completed; want shutdown, 2, 2", r.res.Reason, sp.count(), site.completed.Load())
	}
}

// recordingScheduler is a minimal FIFO scheduler that records which jobs
// were acknowledged with Done.
type recordingScheduler struct {
	mu    sync.Mutex
	q     list.List
	id    uint64
	acked map[uint64]bool
	gate  scheduler.Throttler
}

var testSchedulers sync.Map // name -> *recordingScheduler

func init() {
	scheduler.Register("engine-test-recording", func(d scheduler.Deps) (scheduler.Scheduler, error) {
		s := &recordingScheduler{acked: map[uint64]bool{}, gate: d.Throttler}
		testSchedulers.Store(d.Spider.Name(), s)
		return s, nil
	})
}

func (s *recordingScheduler) Open(context.Context) error { return nil }

func (s *recordingScheduler) Enqueue(ctx context.Context, req *spider.Request) (bool, error) {
	scopes, err := s.gate.Scopes(ctx, req)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id++
	s.q.PushBack(&scheduler.Job{Req: req, Scopes: scopes, ID: s.id})
	return true, nil
}

func (s *recordingScheduler) Next(context.Context, time.Time) (*scheduler.Job, time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.q.Len() == 0 {
		return nil, 0, nil
	}
	return s.q.Remove(s.q.Front()).(*scheduler.Job), 0, nil
}

func (s *recordingScheduler) Done(_ context.Context, j *scheduler.Job) error {
	s.mu.Lock()
	s.acked[j.ID] = true
	s.mu.Unlock()
	return nil
}

func (s *recordingScheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.Len()
}

func (s *recordingScheduler) Close(context.Context) error { return nil }

type namedSpider struct {
	*urlsSpider
	name string
}

func (n namedSpider) Name() string { return n.name }

func TestAbortCancelsDownloadsAndKeepsJobsUnacknowledged(t *testing.T) {
	checkGoroutines(t)
	site, base := newBlockingSite(t)
	sp := namedSpider{newURLsSpider(urlsOf(base, 10)...), "abort-test"}
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 3, "SCHEDULER", "engine-test-recording"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := testSchedulers.Load("abort-test")
	rs := v.(*recordingScheduler)
	done := runAsync(e, context.Background())
	waitFor(t, "requests in flight", func() bool { return site.arrived.Load() == 3 })
	e.Abort()
	r := <-done // returns without site.open(): downloads were cancelled
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.Reason != "aborted" {
		t.Errorf("reason = %q, want aborted", r.res.Reason)
	}
	waitFor(t, "server to see the cancellations", func() bool { return site.cancelled.Load() == 3 })
	if sp.count() != 0 {
		t.Errorf("%d callbacks ran after Abort, want 0", sp.count())
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.acked) != 0 {
		t.Errorf("aborted jobs acknowledged: %v", rs.acked)
	}
	if got := r.res.Stats["downloader/exception_count"]; got != 0 {
		t.Errorf("aborted downloads counted as %v download errors, want 0", got)
	}
}

func TestAbortDuringCallbackKeepsTheJob(t *testing.T) {
	checkGoroutines(t)
	srv := linkSite(t, 4)
	inCallback := make(chan struct{})
	sp := namedSpider{newURLsSpider(srv.URL + "/p/0"), "abort-callback-test"}
	sp.onPage = func(ctx context.Context, _ *spider.Response) error {
		close(inCallback)
		<-ctx.Done() // Abort cancels the callback's context
		return ctx.Err()
	}
	e, err := New(sp, testSettings(t, "SCHEDULER", "engine-test-recording"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := testSchedulers.Load("abort-callback-test")
	rs := v.(*recordingScheduler)
	done := runAsync(e, context.Background())
	<-inCallback
	e.Abort()
	if r := <-done; r.err != nil || r.res.Reason != "aborted" {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.acked) != 0 {
		t.Errorf("a job whose callback was cut short by Abort was acknowledged: %v", rs.acked)
	}
}

func TestAbortAfterStop(t *testing.T) {
	checkGoroutines(t)
	site, base := newBlockingSite(t)
	sp := newURLsSpider(urlsOf(base, 5)...)
	e, err := New(sp, testSettings(t, "CONCURRENT_REQUESTS", 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := runAsync(e, context.Background())
	waitFor(t, "requests in flight", func() bool { return site.arrived.Load() == 2 })
	e.Stop("shutdown") // first SIGINT
	e.Abort()          // second SIGINT
	r := <-done
	if r.err != nil || r.res.Reason != "aborted" {
		t.Errorf("Run = %v, %v; want reason aborted", r.res, r.err)
	}
}

func TestCloseSpiderLimits(t *testing.T) {
	checkGoroutines(t)
	srv := linkSite(t, 200)
	for _, tc := range []struct {
		setting string
		n       int
		reason  string
		stat    string
	}{
		{"CLOSESPIDER_ITEMCOUNT", 10, "closespider_itemcount", "item_scraped_count"},
		{"CLOSESPIDER_PAGECOUNT", 10, "closespider_pagecount", "downloader/response_count"},
		{"CLOSESPIDER_ERRORCOUNT", 5, "closespider_errorcount", "spider_exceptions/count"},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			sp := newURLsSpider(srv.URL + "/p/0")
			sp.follow = true
			if tc.setting == "CLOSESPIDER_ERRORCOUNT" {
				var n atomic.Int64
				sp.onPage = func(context.Context, *spider.Response) error {
					if n.Add(1)%2 == 0 {
						return fmt.Errorf("odd page")
					}
					return nil
				}
			}
			e, err := New(sp, testSettings(t, tc.setting, tc.n, "CONCURRENT_REQUESTS", 2), Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != tc.reason {
				t.Errorf("reason = %q, want %q", res.Reason, tc.reason)
			}
			// In-flight requests finish after the limit: a few more, never the whole site.
			if got := res.Stats[tc.stat]; got < float64(tc.n) || got > float64(tc.n+8) {
				t.Errorf("%s = %v, want between %d and %d", tc.stat, got, tc.n, tc.n+8)
			}
		})
	}
}

func TestCloseSpiderTimeout(t *testing.T) {
	checkGoroutines(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	site, base := newBlockingSite(t)
	sp := newURLsSpider(urlsOf(base, 10)...)
	// No rate controller: its start ramp would pace the second request on
	// a clock that stands still.
	e, err := New(sp, testSettings(t, "CLOSESPIDER_TIMEOUT", 30.0, "CONCURRENT_REQUESTS", 2, "THROTTLING_RATE_CONTROL", false), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	done := runAsync(e, context.Background())
	waitFor(t, "requests in flight", func() bool { return site.arrived.Load() == 2 })
	clk.Advance(29 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("crawl ended before CLOSESPIDER_TIMEOUT: %v", r.res.Reason)
	default:
	}
	clk.Advance(2 * time.Second)
	site.open()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.Reason != "closespider_timeout" {
		t.Errorf("reason = %q, want closespider_timeout", r.res.Reason)
	}
	if got := site.arrived.Load(); got > 4 {
		t.Errorf("%d requests sent, want the 2 in flight and at most a couple more", got)
	}
	if r.res.Elapsed != 31*time.Second {
		t.Errorf("elapsed = %v, want 31s of fake time", r.res.Elapsed)
	}
}

// lazySpider yields up to a million distinct start requests (or, with
// dupes, the same 50 over and over without end), counting how many were
// produced.
type lazySpider struct {
	*urlsSpider
	base     string
	dupes    bool
	produced atomic.Int64
}

func (s *lazySpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for i := 0; s.dupes || i < 1_000_000; i++ {
			s.produced.Add(1)
			n := i
			if s.dupes {
				n = i % 50
			}
			if !yield(spider.NewRequest(fmt.Sprintf("%s/p/%d", s.base, n), nil)) {
				return
			}
		}
	}
}

func TestStartRequestsAreConsumedLazily(t *testing.T) {
	checkGoroutines(t)
	srv := linkSite(t, 1_000_000)
	for _, dupes := range []bool{false, true} {
		t.Run(fmt.Sprintf("dupes=%v", dupes), func(t *testing.T) {
			sp := &lazySpider{urlsSpider: newURLsSpider(), base: srv.URL, dupes: dupes}
			e, err := New(sp, testSettings(t, "CLOSESPIDER_PAGECOUNT", 20, "CONCURRENT_REQUESTS", 4), Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != "closespider_pagecount" {
				t.Errorf("reason = %q", res.Reason)
			}
			// The engine keeps a few hundred start requests queued ahead,
			// never the million. Duplicates are filtered as they come and
			// fill no queue, so the engine goes on pulling them for as
			// long as the crawl runs (how many depends on the machine's
			// speed), but scheduling goes on meanwhile: a crawl whose
			// start requests never end still ends at its page count, and
			// stops pulling when it does.
			got := sp.produced.Load()
			if !dupes && got > 5000 {
				t.Errorf("%d start requests materialised to crawl 20 pages", got)
			}
			if after := sp.produced.Load(); after != got {
				t.Errorf("start requests still pulled after Run returned: %d, then %d", got, after)
			}
		})
	}
}
