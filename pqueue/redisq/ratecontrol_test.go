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

// The rate controller of issue 12 (THROTTLING_RATE_CONTROL, on by default)
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

// Slow start (one request in flight, then one more per round of accepted
// answers) counts the answers of all workers in the shared gate: the
// gate's parameters go stale at the answer count where the limit grows
// (ValidUntilOK) and whoever pops next refreshes them. Accepted answers
// cost no policy update of their own.
func TestSlowStartSharedAcrossWorkers(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false,
		"THROTTLING_SCOPES": map[string]any{"h.test": map[string]any{"concurrency": 4, "delay": 0}}}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 20)...)
	now := func() time.Time { return w.clk.Now().Add(time.Hour) }

	got := popAll(t, a.f, now())
	if p := gateOf(t, a, "h.test"); p.ValidUntilOK == 0 {
		// A policy without slow start: the scope's concurrency at once.
		if len(got) != 4 || p.Concurrency != 4 {
			t.Fatalf("a new scope without slow start sent %d requests at once, gate %+v; want 4", len(got), p)
		}
		t.Skip("the rate controller has no slow start")
	}
	if len(got) != 1 {
		t.Fatalf("a new scope sent %d requests at once, want 1 (slow start)", len(got))
	}
	if p := gateOf(t, a, "h.test"); p.Concurrency != 1 || p.ValidUntilOK != 1 {
		t.Fatalf("gate %+v: want concurrency 1 until the first answer", p)
	}
	a.respond(t, got[0], http.StatusOK, nil) // answers: 1

	// b pops: the gate is stale (1 answer), refreshed to 2 in flight.
	gb := popAll(t, b.f, now())
	if len(gb) != 2 {
		t.Fatalf("after a's first answer b sent %d, want 2", len(gb))
	}
	if p := gateOf(t, b, "h.test"); p.Concurrency != 2 || p.ValidUntilOK != 3 {
		t.Fatalf("gate %+v: want concurrency 2 until the third answer", p)
	}
	b.respond(t, gb[0], http.StatusOK, nil) // answers: 2
	ga := popAll(t, a.f, now())
	if len(ga) != 1 {
		t.Fatalf("a sent %d with one of 2 slots free, want 1", len(ga))
	}
	b.respond(t, gb[1], http.StatusOK, nil) // answers: 3: the limit grows to 3
	gb = popAll(t, b.f, now())
	if len(gb) != 2 {
		t.Fatalf("after 3 answers (one request in flight) b sent %d, want 2 (limit 3)", len(gb))
	}
	a.respond(t, ga[0], http.StatusOK, nil)
	for _, p := range gb {
		b.respond(t, p, http.StatusOK, nil) // answers: 6: slow start reaches the concurrency
	}
	got = popAll(t, a.f, now())
	if len(got) != 4 {
		t.Fatalf("after 6 answers a sent %d, want 4 (the scope's concurrency)", len(got))
	}
	if p := gateOf(t, a, "h.test"); p.Concurrency != 4 || p.ValidUntilOK != 0 {
		t.Fatalf("gate %+v: want concurrency 4, slow start over", p)
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
