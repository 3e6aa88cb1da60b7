package redisq_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/throttling"
)

// The delay between two workers' requests to a scope counts from the
// moment the first one reached its connection (Throttler.Wired), not from
// its admission in Redis: a request that waited between its pop and the
// wire (a dial, a busy machine) is followed by another worker's request no
// sooner than the delay after the server saw it. The wire mark is timed by
// Redis's clock when the mark arrives, so no worker's clock matters.
func TestWiredDelayCountsFromTheWireAcrossWorkers(t *testing.T) {
	cases := []struct {
		name    string
		wireLag time.Duration // between a's pop and its request reaching the wire
		wired   bool          // a reports the write
		// what b's pop finds 2 s (the delay) after a's admission, and 2 s
		// after a's request reached the wire
		atDelay, afterWire bool
	}{
		{name: "reached the wire late", wireLag: 700 * time.Millisecond, wired: true, atDelay: false, afterWire: true},
		{name: "reached the wire at once", wireLag: 0, wired: true, atDelay: true, afterWire: true},
		{name: "no wire mark (request still waiting)", wireLag: 700 * time.Millisecond, wired: false, atDelay: true, afterWire: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1, throttling.GateParams{}, nil)
			set := map[string]any{"DOWNLOAD_DELAY": 2.0, "RANDOMIZE_DOWNLOAD_DELAY": false}
			a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
			a.push(t, urls("h.test", 3)...)
			w.advance(time.Second) // past the scope's start ramp
			p, _ := pop(t, a.f, w.clk.Now().Add(time.Hour))
			if p == nil {
				t.Fatal("first request not popped")
			}
			w.advance(tc.wireLag)
			if tc.wired {
				a.thr.Wired(p.Scopes, p.SentAt)
				flush(t, a.f)
			}
			w.advance(2*time.Second - tc.wireLag - time.Millisecond)
			if q, _ := pop(t, b.f, w.clk.Now().Add(time.Hour)); q != nil {
				t.Fatal("b sent inside the delay after a's admission")
			}
			w.advance(time.Millisecond)
			q, _ := pop(t, b.f, w.clk.Now().Add(time.Hour))
			if got := q != nil; got != tc.atDelay {
				t.Fatalf("b popped at the delay after a's admission: %v, want %v", got, tc.atDelay)
			}
			if q == nil {
				w.advance(tc.wireLag - time.Millisecond)
				if q, _ = pop(t, b.f, w.clk.Now().Add(time.Hour)); q != nil {
					t.Fatal("b sent 1 ms before the delay after a's request reached the wire")
				}
				w.advance(time.Millisecond)
				q, _ = pop(t, b.f, w.clk.Now().Add(time.Hour))
			}
			if got := q != nil; got != tc.afterWire {
				t.Fatalf("b popped at the delay after the wire: %v, want %v", got, tc.afterWire)
			}
			a.respond(t, p, http.StatusOK, nil)
			b.respond(t, q, http.StatusOK, nil)
		})
	}
}

// A request that reached the wire cannot give its turn back: reported
// not sent afterwards (a response the engine dropped), the delay still
// counts from it.
func TestWiredRequestKeepsItsTurnShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"DOWNLOAD_DELAY": 2.0, "RANDOMIZE_DOWNLOAD_DELAY": false}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 3)...)
	w.advance(time.Second)
	p, _ := pop(t, a.f, w.clk.Now().Add(time.Hour))
	if p == nil {
		t.Fatal("first request not popped")
	}
	a.thr.Wired(p.Scopes, p.SentAt)
	a.thr.NotSent(context.Background(), p.Req, p.Scopes, p.SentAt)
	if err := a.f.Ack(context.Background(), p.ID); err != nil {
		t.Fatal(err)
	}
	flush(t, a.f)
	w.advance(time.Second)
	if q, _ := pop(t, b.f, w.clk.Now().Add(time.Hour)); q != nil {
		t.Fatal("a request that reached the wire gave its turn back")
	}
}
