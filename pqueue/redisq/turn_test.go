package redisq_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/throttling"
)

// robots.txt, fetched for a worker's first request of a host, takes that
// request's turn in the shared gate as it does in memory
// (throttling.WithTurnOf): it is admitted at once, the request gives its
// send up (it is sent back through the queue), and every worker's next
// request of the host waits the delay after robots.txt.
func TestAdmitInTurnOfShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"DOWNLOAD_DELAY": 2.0, "RANDOMIZE_DOWNLOAD_DELAY": false}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 3)...)
	w.advance(time.Second) // past the scope's start ramp
	seed, _ := pop(t, a.f, w.clk.Now().Add(time.Hour))
	if seed == nil {
		t.Fatal("first request not popped")
	}
	w.advance(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rctx := throttling.WithTurnOf(throttling.WithoutSlot(ctx), seed.SentAt)
	at, err := a.thr.Admit(rctx, seed.Scopes)
	if err != nil {
		t.Fatalf("robots.txt not admitted in its request's turn: %v", err)
	}
	// The request robots.txt was fetched for goes back to the queue.
	a.thr.NotSent(context.Background(), seed.Req, seed.Scopes, seed.SentAt)
	if err := a.f.Nack(context.Background(), seed.ID); err != nil {
		t.Fatal(err)
	}
	flush(t, a.f)
	robots := seed.Req.Clone()
	a.thr.Done(context.Background(), robots, seed.Scopes, at, nil, nil)
	flush(t, a.f)
	q := popWhenDue(t, w, b.f, 2*time.Second, "b's delay after robots.txt")
	b.respond(t, q, http.StatusOK, nil)
}

// A send in another's turn is counted apart (GateState.TurnSends: the rate
// controller leaves robots.txt out of a first refusal's burst), has no
// send before it to give back to, and is the scope's last send, which its
// wire mark moves, as in memory.
func TestTurnSendCountedShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"DOWNLOAD_DELAY": 2.0, "RANDOMIZE_DOWNLOAD_DELAY": false}
	a := w.throttled(t, "a", set)
	a.push(t, urls("h.test", 3)...)
	w.advance(time.Second)
	seed, _ := pop(t, a.f, w.clk.Now().Add(time.Hour))
	if seed == nil {
		t.Fatal("first request not popped")
	}
	w.advance(100 * time.Millisecond)
	ctx := throttling.WithTurnOf(throttling.WithoutSlot(context.Background()), seed.SentAt)
	at, err := a.thr.Admit(ctx, seed.Scopes)
	if err != nil {
		t.Fatal(err)
	}
	admitted := w.clk.Now()
	gate := func() throttling.GateState { t.Helper(); return gateStateOf(t, a, "h.test") }
	if g := gate(); g.TurnSends != 1 || g.Sends != 2 || g.HasPrev || !g.LastSent.Equal(admitted) {
		t.Fatalf("after robots.txt in the seed's turn: %+v; want 1 turn send of 2, the last at %v, none before it", g, admitted)
	}
	w.advance(4 * time.Millisecond)
	a.thr.Wired(seed.Scopes, at)
	flush(t, a.f)
	if g := gate(); !g.Wired.Equal(w.clk.Now()) || !g.LastSent.Equal(admitted) {
		t.Fatalf("robots.txt's wire mark: %+v; want wired at %v", g, w.clk.Now())
	}
	a.thr.NotSent(context.Background(), seed.Req, seed.Scopes, seed.SentAt)
	if err := a.f.Ack(context.Background(), seed.ID); err != nil {
		t.Fatal(err)
	}
	flush(t, a.f)
	if g := gate(); !g.LastSent.Equal(admitted) || g.Other != 1 || g.TurnSends != 1 {
		t.Fatalf("after the seed's turn was given: %+v; want robots.txt still the last send, the seed counted as other", g)
	}
}
