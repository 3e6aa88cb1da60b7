package redisq_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// tworker is one worker of a shared job as the engine builds it: a
// throttler in shared mode over the job's Redis, and the frontier, both on
// the fake clock (Redis's clock is the job's testclock).
type tworker struct {
	thr *throttling.Throttler
	f   *redisq.Frontier
}

func (w *world) throttled(t *testing.T, owner string, set map[string]any) *tworker {
	t.Helper()
	return w.throttledWith(t, owner, set, redisq.FrontierOptions{})
}

// throttledWith is throttled with frontier options (its store, gates,
// throttling and clock are the world's).
func (w *world) throttledWith(t *testing.T, owner string, set map[string]any, o redisq.FrontierOptions) *tworker {
	t.Helper()
	s := settings.New()
	if err := s.SetMap(set, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	st, err := redisq.NewStore(redisq.Options{Client: w.c, Layout: w.l, Codec: codec, Owner: owner, LeaseTTL: w.lease})
	if err != nil {
		t.Fatal(err)
	}
	shared := redisq.NewThrottling(st)
	thr, err := throttling.New(s, throttling.Options{Clock: w.clk, Shared: shared, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	o.Store, o.Gates, o.Throttling, o.Clock = st, thr, shared, w.clk
	f, err := redisq.NewFrontier(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(context.Background()) })
	return &tworker{thr: thr, f: f}
}

func (tw *tworker) push(t *testing.T, urls ...string) {
	t.Helper()
	for _, u := range urls {
		req := spider.MustRequest(u, nil)
		sc, err := tw.thr.Scopes(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.f.PushUnique(context.Background(), time.Now(), req, sc, 0, dupefilter.Of(req), true); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, tw.f)
}

// respond completes a popped job with a response of status and headers,
// as the engine does: the throttler first, then the acknowledgement.
func (tw *tworker) respond(t *testing.T, p *pqueue.Popped, status int, h http.Header) {
	t.Helper()
	res := &spider.Response{Request: p.Req, Status: status, Header: h, URL: p.Req.URL}
	tw.thr.Done(context.Background(), p.Req, p.Scopes, p.SentAt, res, nil)
	if err := tw.f.Ack(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	flush(t, tw.f)
}

func urls(host string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("http://%s/%d", host, i)
	}
	return out
}

// A Retry-After seen by one worker holds back every worker.
func TestRetryAfterHoldsEveryWorker(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false, "BACKOFF_RETRY_AFTER_PACING": false}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 5)...)
	p, _ := pop(t, a.f, w.clk.Now())
	if p == nil {
		t.Fatal("nothing popped")
	}
	a.respond(t, p, http.StatusTooManyRequests, http.Header{"Retry-After": {"10"}})
	if q, _ := pop(t, b.f, w.clk.Now().Add(time.Hour)); q != nil {
		t.Fatal("b sent inside the Retry-After window a was told of")
	}
	popWhenDue(t, w, b.f, 10*time.Second, "the Retry-After window a was told of")
	g, _, err := b.f.Store().Gate(context.Background(), "h.test")
	if err != nil || g.State.Refused != 1 || g.State.Sends != 2 {
		t.Fatalf("gate %+v (%v): want 2 sends, 1 refused", g.State, err)
	}
}

// A backoff step (a 503 without Retry-After) taken on one worker's
// feedback slows every worker, and recovers for every worker after the
// quiet window (the gate goes stale and is refreshed by whoever pops).
func TestBackoffStepSharedAndRecovers(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false, "BACKOFF_JITTER": 0,
		"BACKOFF_WINDOW": 10, "BACKOFF_MIN_DELAY": 2}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 8)...)
	p, _ := pop(t, a.f, w.clk.Now())
	a.respond(t, p, http.StatusServiceUnavailable, nil)
	if q, _ := pop(t, b.f, w.clk.Now().Add(time.Hour)); q != nil {
		t.Fatal("b sent right after a's backoff step")
	}
	w.advance(2 * time.Second) // the step's delay
	q, _ := pop(t, b.f, w.clk.Now().Add(time.Hour))
	if q == nil {
		t.Fatal("b did not send after the backoff delay")
	}
	b.respond(t, q, http.StatusOK, nil)
	w.advance(time.Second)
	if r, _ := pop(t, a.f, w.clk.Now().Add(time.Hour)); r != nil {
		t.Fatal("a sent 1 s after b, inside the backed-off 2 s delay")
	}
	// The quiet window passes: the level drops, the delay is 0 again.
	w.advance(10 * time.Second)
	got := popAll(t, a.f, w.clk.Now().Add(time.Hour))
	if len(got) < 2 {
		t.Fatalf("after recovery a sent %d requests at once, want several (no delay any more)", len(got))
	}
}

// A robots.txt Crawl-delay applied by one worker holds for all; DelayScope
// from one worker too.
func TestRobotsDelayAndDelayScopeShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"RANDOMIZE_DOWNLOAD_DELAY": false}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 6)...)
	a.thr.SetRobotsDelay("h.test", 3*time.Second)
	if p, _ := pop(t, b.f, w.clk.Now()); p == nil {
		t.Fatal("first request not sent")
	}
	if p, _ := pop(t, a.f, w.clk.Now().Add(time.Hour)); p != nil {
		t.Fatal("a sent inside b's Crawl-delay gap (concurrency 1, delay 3 s)")
	}
	g, _, _ := b.f.Store().Gate(context.Background(), "h.test")
	if g.Params.Delay != 3*time.Second || g.Params.Concurrency != 1 {
		t.Fatalf("gate params %+v, want the Crawl-delay: 3 s, concurrency 1", g.Params)
	}
	b.thr.DelayScope("other.test", time.Minute)
	g, _, _ = a.f.Store().Gate(context.Background(), "other.test")
	if !g.Params.BlockedUntil.Equal(w.clk.Now().Add(time.Minute)) {
		t.Fatalf("DelayScope: blocked until %v, want %v", g.Params.BlockedUntil, w.clk.Now().Add(time.Minute))
	}
}

// A request sent outside the queue (robots.txt) is admitted by the shared
// gate and counts against the scope's concurrency.
func TestAdmitOutsideQueue(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"THROTTLING_SCOPES": map[string]any{"h.test": map[string]any{"concurrency": 1, "delay": 0}}}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 2)...)
	sc := throttling.Scopes{{Name: "h.test"}}
	sentAt, err := a.thr.Admit(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := pop(t, b.f, w.clk.Now()); p != nil {
		t.Fatal("b popped while a's robots.txt fetch holds the only slot")
	}
	req := spider.MustRequest("http://h.test/robots.txt", nil)
	a.thr.Done(context.Background(), req, sc, sentAt, &spider.Response{Request: req, Status: 200, URL: req.URL}, nil)
	flush(t, a.f)
	w.advance(time.Second) // past the scope's start ramp
	if p, _ := pop(t, b.f, w.clk.Now().Add(time.Hour)); p == nil {
		t.Fatal("b could not pop after the admission was released")
	}
}

// A request that never reached the server (a URL robots.txt disallows,
// dropped by the middleware: Throttler.NotSent) gives its turn of the
// Crawl-delay back in the shared gate too: the next worker sends at once,
// and the delay still runs from the last request that was answered.
func TestNotSentGivesTurnBackShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"RANDOMIZE_DOWNLOAD_DELAY": false}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 6)...)
	a.thr.SetRobotsDelay("h.test", 3*time.Second)
	p, _ := pop(t, a.f, w.clk.Now())
	if p == nil {
		t.Fatal("first request not sent")
	}
	a.respond(t, p, http.StatusOK, nil)
	w.advance(3 * time.Second)
	for i := range 2 { // two disallowed URLs in a row, one per worker
		tw := []*tworker{b, a}[i]
		q, _ := pop(t, tw.f, w.clk.Now().Add(time.Hour))
		if q == nil {
			t.Fatalf("disallowed URL %d: not sent although only unsent requests followed the last answer", i)
		}
		tw.thr.NotSent(context.Background(), q.Req, q.Scopes, q.SentAt)
		if err := tw.f.Ack(context.Background(), q.ID); err != nil {
			t.Fatal(err)
		}
		flush(t, tw.f)
	}
	q, _ := pop(t, b.f, w.clk.Now().Add(time.Hour))
	if q == nil {
		t.Fatal("the next request waited for the delay of requests that never reached the server")
	}
	b.respond(t, q, http.StatusOK, nil)
	if r, _ := pop(t, a.f, w.clk.Now().Add(time.Hour)); r != nil {
		t.Fatal("a sent inside the Crawl-delay after an answered request")
	}
	g, _, err := a.f.Store().Gate(context.Background(), "h.test")
	if err != nil || g.State.Sends != 4 || g.State.Other != 2 || g.State.OK != 2 {
		t.Fatalf("gate %+v (%v): want 4 sends, 2 ok, 2 other (not sent)", g.State, err)
	}
}
