package throttling

import (
	"testing"
	"time"
)

func TestGateRecordWired(t *testing.T) {
	const delay = time.Second
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		run  func(g *Gate)
		next time.Time // NextByDelay after run
	}{
		{"dial of 40 ms: the delay counts from the wire", func(g *Gate) {
			g.RecordSent(t0, 0, 0)
			g.RecordWired(t0, t0.Add(40*ms))
		}, t0.Add(delay + 40*ms)},
		{"reused connection: written at admission", func(g *Gate) {
			g.RecordSent(t0, 0, 0)
			g.RecordWired(t0, t0)
		}, t0.Add(delay)},
		{"a later request was admitted: nothing moves", func(g *Gate) {
			g.RecordSent(t0, 0, 0)
			g.RecordSent(t0.Add(10*ms), 0, 0)
			g.RecordWired(t0, t0.Add(40*ms))
		}, t0.Add(delay + 10*ms)},
		{"a report before the send is ignored", func(g *Gate) {
			g.RecordSent(t0, 0, 0)
			g.RecordWired(t0, t0.Add(-5*ms))
		}, t0.Add(delay)},
		{"a wired request's turn is not given back", func(g *Gate) {
			g.RecordSent(t0, 0, 0)
			g.RecordSent(t0.Add(2*delay), 0, 0)
			g.RecordWired(t0.Add(2*delay), t0.Add(2*delay+30*ms))
			g.GiveBack(t0.Add(2*delay), 0)
		}, t0.Add(3*delay + 30*ms)},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &Gate{Params: GateParams{Delay: delay}}
			c.run(g)
			if got := g.NextByDelay(); !got.Equal(c.next) {
				t.Errorf("NextByDelay = %v, want %v", got.Sub(t0), c.next.Sub(t0))
			}
		})
	}
}

// Through the throttler, on the fake clock: a request admitted at t0 and
// written 40 ms later holds the next one until t0 + 40 ms + the delay.
func TestThrottlerWiredMovesTheDelay(t *testing.T) {
	th, fc := newTestThrottler(t, "DOWNLOAD_DELAY", 1.0, "RANDOMIZE_DOWNLOAD_DELAY", false)
	sc := scopesOf("a.example")
	other := scopesOf("b.example")
	th.Sent(t0, sc)
	th.Sent(t0, other)
	fc.Set(t0.Add(40 * time.Millisecond))
	th.Wired(sc, t0)
	th.Wired(scopesOf("evicted.example"), t0) // no state: nothing created
	th.mu.Lock()
	th.scope("a.example", t0).mgr.RecordDone(t0.Add(50 * time.Millisecond))
	th.scope("b.example", t0).mgr.RecordDone(t0.Add(50 * time.Millisecond))
	th.mu.Unlock()
	if w := th.Wait(t0.Add(time.Second), sc); w != 40*time.Millisecond {
		t.Errorf("wait at t0+1s = %v, want 40ms (the delay counts from the wire)", w)
	}
	if w := th.Wait(t0.Add(time.Second+40*time.Millisecond), sc); w != 0 {
		t.Errorf("wait at t0+1.04s = %v, want 0", w)
	}
	if w := th.Wait(t0.Add(time.Second), other); w != 0 {
		t.Errorf("the other scope waits %v, want 0 (not wired: the delay counts from admission)", w)
	}
	if _, ok := th.scopes["evicted.example"]; ok {
		t.Error("Wired created the state of a scope it did not know")
	}
}

// The rate controller reads the gap between two sends from PrevSent: after
// a wired send, the next send's PrevSent is when the first reached the
// wire, so the gap is the one the server saw; the first keeps its
// admission time as LastSent until then (it names it in its outcome).
func TestGateWiredGap(t *testing.T) {
	ms := time.Millisecond
	g := &Gate{Params: GateParams{Delay: time.Second}}
	g.RecordSent(t0, 0, 0)
	g.RecordWired(t0, t0.Add(40*ms))
	g.RecordWired(t0, t0.Add(30*ms)) // an earlier report changes nothing
	if !g.State.LastSent.Equal(t0) || !g.State.LastOnWire().Equal(t0.Add(40*ms)) {
		t.Fatalf("LastSent %v, on the wire %v; want 0s, 40ms", g.State.LastSent.Sub(t0), g.State.LastOnWire().Sub(t0))
	}
	g.RecordSent(t0.Add(2*time.Second), 0, 0)
	if !g.State.HasPrev || !g.State.PrevSent.Equal(t0.Add(40*ms)) {
		t.Errorf("HasPrev %v, PrevSent %v; want true, 40ms (the first send on the wire)", g.State.HasPrev, g.State.PrevSent.Sub(t0))
	}
	if !g.State.Wired.IsZero() {
		t.Errorf("Wired %v after a new send, want zero", g.State.Wired.Sub(t0))
	}
}
