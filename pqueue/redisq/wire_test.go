package redisq_test

import (
	"context"
	"net/http"
	"strconv"
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

// A wire mark moves where the delay counts from, not the send it names:
// the gate keeps the admission (LastSent, which the feedback names the
// request by), records the write apart (Wired), and still knows the send
// before it (PrevSent, as it reached the wire), as the in-memory gate
// does; the next send's previous send is the wired one's write. The
// rate controller's gap bounds read those two sends.
func TestWireMarkKeepsThePreviousSendShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "DOWNLOAD_DELAY": 2.0, "RANDOMIZE_DOWNLOAD_DELAY": false}
	a, b := w.throttled(t, "a", set), w.throttled(t, "b", set)
	a.push(t, urls("h.test", 4)...)
	w.advance(time.Second) // past the scope's start ramp
	gate := func() throttling.GateState { t.Helper(); return gateStateOf(t, a, "h.test") }
	p1, _ := pop(t, a.f, w.clk.Now().Add(time.Hour))
	if p1 == nil {
		t.Fatal("first request not popped")
	}
	t1 := w.clk.Now()
	w.advance(3 * time.Millisecond)
	a.thr.Wired(p1.Scopes, p1.SentAt)
	flush(t, a.f)
	w1 := w.clk.Now()
	if g := gate(); !g.LastSent.Equal(t1) || !g.Wired.Equal(w1) || !g.LastOnWire().Equal(w1) {
		t.Fatalf("after the first wire mark: last sent %v, wired %v; want the admission %v and the write %v", g.LastSent, g.Wired, t1, w1)
	}
	p2 := popWhenDue(t, w, b.f, 2*time.Second, "b's delay after the first request's write")
	t2 := w.clk.Now()
	if g := gate(); !g.HasPrev || !g.PrevSent.Equal(w1) || !g.LastSent.Equal(t2) || !g.Wired.IsZero() {
		t.Fatalf("after the second send: %+v; want the last send %v, not wired, and the previous one at its write %v", g, t2, w1)
	}
	w.advance(5 * time.Millisecond)
	b.thr.Wired(p2.Scopes, p2.SentAt)
	flush(t, b.f)
	w2 := w.clk.Now()
	g := gate()
	if !g.HasPrev || !g.PrevSent.Equal(w1) || !g.LastSent.Equal(t2) || !g.Wired.Equal(w2) {
		t.Fatalf("after the second wire mark: %+v; want the previous send %v kept, last sent %v, wired %v", g, w1, t2, w2)
	}
	// Reported not sent after its write: the turn is kept, and so is
	// the send before it.
	b.thr.NotSent(context.Background(), p2.Req, p2.Scopes, p2.SentAt)
	if err := b.f.Ack(context.Background(), p2.ID); err != nil {
		t.Fatal(err)
	}
	flush(t, b.f)
	if g := gate(); !g.HasPrev || !g.PrevSent.Equal(w1) || !g.LastSent.Equal(t2) || !g.Wired.Equal(w2) {
		t.Fatalf("a wired send gave its turn back: %+v", g)
	}
	a.respond(t, p1, http.StatusOK, nil)
}

// A gate hash written before the wire time and the turn counter existed
// (no lw, no nt) reads as before: the last send is where the delay counts
// from, the send before it is known while lr names the last one.
func TestOldGateHashWithoutWireTimeShared(t *testing.T) {
	w := newWorld(t, 1, throttling.GateParams{}, nil)
	set := map[string]any{"ROBOTSTXT_OBEY": false, "DOWNLOAD_DELAY": 2.0, "RANDOMIZE_DOWNLOAD_DELAY": false}
	a := w.throttled(t, "a", set)
	a.push(t, urls("h.test", 3)...)
	w.advance(time.Second)
	p, _ := pop(t, a.f, w.clk.Now().Add(time.Hour))
	if p == nil {
		t.Fatal("first request not popped")
	}
	// As the old wire mark left it: ls moved to the write, lr cleared.
	key := w.l.ShardKey(w.l.ShardOf("h.test"), "s:h.test")
	wire := w.clk.Now().Add(500 * time.Millisecond)
	ms := strconv.FormatFloat(float64(wire.UnixMicro())/1000, 'f', 3, 64)
	if err := w.c.HSet(context.Background(), key, "ls", ms, "lr", "").Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.c.HDel(context.Background(), key, "lw", "nt").Err(); err != nil {
		t.Fatal(err)
	}
	if s := gateStateOf(t, a, "h.test"); !s.LastSent.Equal(wire) || !s.Wired.IsZero() || s.HasPrev || s.TurnSends != 0 {
		t.Fatalf("old gate read as %+v; want the last send at %v, no wire time, no previous send", s, wire)
	}
	q := popWhenDue(t, w, a.f, 2*time.Second+500*time.Millisecond, "the delay after an old gate's last send")
	if s := gateStateOf(t, a, "h.test"); !s.HasPrev || !s.PrevSent.Equal(wire) || !s.LastSent.Equal(w.clk.Now()) {
		t.Fatalf("after a send on an old gate: %+v; want the previous send %v", s, wire)
	}
	// A reservation still pending in a gate of that shape (lr names it,
	// no lw field): its wire mark is recorded apart, and its turn kept.
	if err := w.c.HDel(context.Background(), key, "lw", "nt").Err(); err != nil {
		t.Fatal(err)
	}
	sent := w.clk.Now()
	w.advance(7 * time.Millisecond)
	a.thr.Wired(q.Scopes, q.SentAt)
	flush(t, a.f)
	if s := gateStateOf(t, a, "h.test"); !s.LastSent.Equal(sent) || !s.Wired.Equal(w.clk.Now()) || !s.HasPrev {
		t.Fatalf("wire mark on an old gate's pending send: %+v; want the admission %v kept, wired at %v", s, sent, w.clk.Now())
	}
}
