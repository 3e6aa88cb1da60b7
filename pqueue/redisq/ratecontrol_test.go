package redisq_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/throttling"
)

// The rate controller (THROTTLING_RATE_CONTROL, on by default)
// in a distributed job: its state is part of the scope's shared policy
// record, so every worker paces from the same estimate, and slow start
// counts the answers of every worker.

// policyOf reads scope's policy state from the job's shared record.
func policyOf(t *testing.T, w *world, scope string) throttling.PolicyState {
	t.Helper()
	key := w.l.ShardKey(w.l.ShardOf(scope), "s:"+scope)
	raw, err := w.c.HGet(context.Background(), key, "p").Result()
	if err != nil {
		t.Fatalf("reading the policy record of %s: %v", scope, err)
	}
	var rec struct {
		Policy *throttling.PolicyState `json:"policy"`
	}
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.Policy == nil {
		t.Fatalf("policy record of %s: %q (%v)", scope, raw, err)
	}
	return *rec.Policy
}

func gateOf(t *testing.T, tw *tworker, scope string) throttling.GateParams {
	t.Helper()
	g, _, err := tw.f.Store().Gate(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	return g.Params
}

// gateStateOf is the state of scope's gate in the job's store.
func gateStateOf(t *testing.T, tw *tworker, scope string) throttling.GateState {
	t.Helper()
	g, ok, err := tw.f.Store().Gate(context.Background(), scope)
	if err != nil || !ok {
		t.Fatalf("gate of %s: %v %v", scope, ok, err)
	}
	return g.State
}

// The rate controller's start ramp (docs/throttling.md, "The start ramp,
// not a slow start") paces a new scope's first requests in the shared gate
// too, for every worker of the job: the first parameters of a scope the
// store has never seen are stale at once, so the first pop has the policy
// ticked (the ramp starts: 20/s, doubling every 50 ms) before it sends;
// each step is a time-based change of the gate. After 300 ms the ramp is
// over and the scope's concurrency goes at once.
func TestStartRampSharedAcrossWorkers(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false,
		"THROTTLING_SCOPES": map[string]any{"h.test": map[string]any{"concurrency": 4, "delay": 0}}}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 20)...)

	got := popAll(t, a.f, w.clk.Now())
	if len(got) != 1 {
		t.Fatalf("a new scope sent %d requests at once, want 1 (the start ramp paces them)", len(got))
	}
	if p := gateOf(t, a, "h.test"); p.Delay != 50*time.Millisecond || p.Concurrency != 4 {
		t.Fatalf("gate %+v: want 50ms between sends (20/s) and the configured concurrency 4", p)
	}
	if got := popAll(t, b.f, w.clk.Now()); len(got) != 0 {
		t.Fatalf("b sent %d in the same instant, want 0: the ramp is the job's, not a worker's", len(got))
	}
	w.advance(50 * time.Millisecond)
	if got := popAll(t, b.f, w.clk.Now()); len(got) != 1 {
		t.Fatalf("b sent %d 50 ms later, want 1", len(got))
	}
	if p := gateOf(t, b, "h.test"); p.Delay != 25*time.Millisecond {
		t.Fatalf("gate %+v after one step: want 25ms between sends (40/s)", p)
	}
	w.advance(300 * time.Millisecond) // the ramp is over
	if got := popAll(t, a.f, w.clk.Now()); len(got) != 2 {
		t.Fatalf("after the ramp a sent %d, want the 2 free slots of 4 at once", len(got))
	}
	if p := gateOf(t, a, "h.test"); p.Delay != 0 {
		t.Fatalf("gate %+v after the ramp: want no delay", p)
	}
}

// A refusal with Retry-After seen by one worker sets the rate controller's
// estimate in the shared record; another worker's refresh keeps it (not
// a fresh controller), and its own later refusal is the same controller's
// second event: the estimate holds across workers.
func TestRateEstimateSharedAcrossWorkers(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false, "BACKOFF_JITTER": 0,
		"THROTTLING_SCOPES": map[string]any{"h.test": map[string]any{"concurrency": 1, "delay": 0}}}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 200)...)
	step := func(tw *tworker, status int, h http.Header) {
		t.Helper()
		var p *pqueue.Popped
		for range 100 {
			if p, _ = pop(t, tw.f, w.clk.Now()); p != nil {
				break
			}
			w.advance(10 * time.Millisecond)
		}
		if p == nil {
			t.Fatal("nothing popped in 1 s")
		}
		tw.respond(t, p, status, h)
	}
	// a: 20 accepted answers, then a refusal with Retry-After 1.
	for range 20 {
		step(a, http.StatusOK, nil)
		w.advance(50 * time.Millisecond)
	}
	step(a, http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})
	st := policyOf(t, w, "h.test")
	if !st.RateOn || st.RateEstimate <= 0 || len(st.RateMarks) != 1 {
		t.Fatalf("after a's refusal: %+v; want the controller pacing, with an estimate and one event", st)
	}
	est := st.RateEstimate
	if p := gateOf(t, a, "h.test"); p.Delay <= 0 || p.ValidUntil.IsZero() {
		t.Fatalf("gate %+v: want the controller's interval and its next step", p)
	}
	// b works on: its pops refresh the stale gate from a's record.
	w.advance(time.Second)
	for range 10 {
		step(b, http.StatusOK, nil)
	}
	st = policyOf(t, w, "h.test")
	if !st.RateOn || st.RateEstimate != est || len(st.RateMarks) != 1 {
		t.Fatalf("after b's refreshes: rate_on %v, estimate %v (a's %v), %d events; want a's controller",
			st.RateOn, st.RateEstimate, est, len(st.RateMarks))
	}
	if st.Rate <= 0 {
		t.Fatalf("after b's refreshes: rate %v, want a pace", st.Rate)
	}
	// b's own refusal is the second event of the same controller.
	w.advance(200 * time.Millisecond)
	step(b, http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})
	st = policyOf(t, w, "h.test")
	if len(st.RateMarks) != 2 {
		t.Fatalf("after b's refusal: %d events, want 2 (a's and b's)", len(st.RateMarks))
	}
}

// RateLimit headers seen by one worker pace every worker: an announced
// policy of 5 requests per second holds b to about one request per 204 ms
// (no jitter: BACKOFF_JITTER applies while the controller paces).
func TestRateLimitPolicySharedAcrossWorkers(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false, "BACKOFF_JITTER": 0,
		"THROTTLING_SCOPES": map[string]any{"h.test": map[string]any{"concurrency": 1, "delay": 0}}}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 10)...)
	p, _ := pop(t, a.f, w.clk.Now())
	if p == nil {
		t.Fatal("nothing popped")
	}
	a.respond(t, p, http.StatusOK, http.Header{"Ratelimit-Policy": {`"default";q=5;w=1`}, "Ratelimit": {`"default";r=4;t=1`}})
	if r, _ := pop(t, b.f, w.clk.Now().Add(100*time.Millisecond)); r != nil {
		t.Fatal("b sent right after a's request; the announced 5 per second allows one per 204 ms")
	}
	w.advance(210 * time.Millisecond)
	q, _ := pop(t, b.f, w.clk.Now())
	if q == nil {
		t.Fatal("b could not send 210 ms after a's request")
	}
	b.respond(t, q, http.StatusOK, nil)
	w.advance(150 * time.Millisecond)
	if r, _ := pop(t, b.f, w.clk.Now()); r != nil {
		t.Fatal("b sent 151 ms after its last request; the announced 5 per second allows one per 204 ms")
	}
	w.advance(60 * time.Millisecond)
	if r, _ := pop(t, b.f, w.clk.Now()); r == nil {
		t.Fatal("b did not send 211 ms after its last request")
	}
}

// RateLimit "remaining" is a send budget in the Lua gate too: one worker's
// answer with 2 left and a reset in 2 s lets two more requests go (from
// any worker), then none until the reset, although every slot is free.
func TestRateLimitRemainingBudgetShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false, "BACKOFF_JITTER": 0,
		"THROTTLING_SCOPES": map[string]any{"h.test": map[string]any{"concurrency": 4, "delay": 0}}}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 10)...)
	p, _ := pop(t, a.f, w.clk.Now())
	if p == nil {
		t.Fatal("nothing popped")
	}
	a.respond(t, p, http.StatusOK, http.Header{"Ratelimit-Remaining": {"2"}, "Ratelimit-Reset": {"2"}, "Ratelimit-Limit": {"5"}})
	// Past the scope's start ramp (300 ms from the policy's first
	// write, the answer above): the budget alone paces.
	w.advance(400 * time.Millisecond)
	for i := range 2 {
		q, _ := pop(t, b.f, w.clk.Now())
		if q == nil {
			t.Fatalf("b could not send request %d of the 2 left", i+1)
		}
		b.respond(t, q, http.StatusOK, nil)
	}
	w.advance(500 * time.Millisecond)
	if r, _ := pop(t, b.f, w.clk.Now()); r != nil {
		t.Fatal("b sent past the remaining quota before the reset, with every slot free")
	}
	if r, _ := pop(t, a.f, w.clk.Now()); r != nil {
		t.Fatal("a sent past the remaining quota before the reset, with every slot free")
	}
	g := gateOf(t, a, "h.test")
	if g.SendLimit != 3 || g.SendLimitUntil.IsZero() {
		t.Fatalf("gate send budget %d until %v, want 3 (1 sent + 2 left) until the reset", g.SendLimit, g.SendLimitUntil)
	}
	w.advance(1600 * time.Millisecond)
	if r, _ := pop(t, b.f, w.clk.Now()); r == nil {
		t.Fatal("b did not send after the reset")
	}
}

// A strict host (token bucket of 0.5/s, burst 1, 429 with Retry-After 2)
// crawled by two workers under a 1 s delay: the rate controller's gap
// bounds (docs/throttling.md, "Strict hosts: limits below the delay") are
// read from the shared gate (its previous send), so the workers settle at
// the host's limit together, with few refusals and none inside a
// Retry-After window.
func TestStrictHostGapBoundsShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false, "BACKOFF_JITTER": 0, "DOWNLOAD_DELAY": 1}
	workers := []*tworker{w.throttled(t, "a", set), w.throttled(t, "b", set)}
	workers[0].push(t, urls("h.test", 100)...)
	const rate = 0.5
	tokens, last := 1.0, w.clk.Now()
	var until time.Time // the latest Retry-After window's end
	ok, refused, inside := 0, 0, 0
	for i := 0; ok < 40; i++ {
		tw := workers[i%2]
		var p *pqueue.Popped
		for range 2000 {
			if p, _ = pop(t, tw.f, w.clk.Now()); p != nil {
				break
			}
			w.advance(10 * time.Millisecond)
		}
		if p == nil {
			t.Fatalf("nothing popped in 20 s (%d accepted, %d refused)", ok, refused)
		}
		now := w.clk.Now()
		if now.Before(until) {
			inside++
		}
		tokens = min(1, tokens+now.Sub(last).Seconds()*rate)
		last = now
		if tokens >= 1 {
			tokens--
			ok++
			w.advance(10 * time.Millisecond)
			tw.respond(t, p, http.StatusOK, nil)
			continue
		}
		refused++
		until = now.Add(2 * time.Second)
		tw.respond(t, p, http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
	}
	st := policyOf(t, w, "h.test")
	t.Logf("40 pages, %d refused; estimate %.3f, bounds [%.3f, %.3f]", refused, st.RateEstimate, st.RateGapLo, st.RateGapHi)
	if inside != 0 {
		t.Errorf("%d requests inside a Retry-After window", inside)
	}
	if st.RateGapLo <= 0 || st.RateGapHi <= 0 || st.RateGapLo > rate || st.RateGapHi < rate {
		t.Errorf("gap bounds [%v, %v], want both, around the limit %v", st.RateGapLo, st.RateGapHi, rate)
	}
	if st.RateEstimate < 0.9*rate || st.RateEstimate > 1.1*rate {
		t.Errorf("estimate %v, want within 10%% of %v", st.RateEstimate, rate)
	}
	if refused > 8 {
		t.Errorf("%d refusals for 40 pages, want at most 8", refused)
	}
}
