package throttling

import (
	"context"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

func TestGateTurnOf(t *testing.T) {
	const delay = time.Second
	ms := time.Millisecond
	for _, c := range []struct {
		name    string
		run     func(g *Gate) (wait time.Duration, took bool)
		wait    time.Duration // CanSendInTurnOf for the request taking the turn
		took    bool          // RecordSentInTurnOf took the turn
		next    time.Time     // NextByDelay after run
		hasPrev bool
	}{
		{"a host's first request: robots.txt goes at once, in its place", func(g *Gate) (time.Duration, bool) {
			g.RecordSent(t0, 0, 0)
			return g.CanSendInTurnOf(t0, t0, 0), g.RecordSentInTurnOf(t0, t0, 0)
		}, 0, true, t0.Add(delay), false},
		{"the request whose turn was taken gives nothing back", func(g *Gate) (time.Duration, bool) {
			g.RecordSent(t0, 0, 0)
			w, took := g.CanSendInTurnOf(t0.Add(5*ms), t0, 0), g.RecordSentInTurnOf(t0.Add(5*ms), t0, 0)
			g.GiveBack(t0, 0)
			return w, took
		}, 0, true, t0.Add(delay + 5*ms), false},
		{"at the same instant, the give-back of the first request is still refused", func(g *Gate) (time.Duration, bool) {
			g.RecordSent(t0, 0, 0)
			w, took := g.CanSendInTurnOf(t0, t0, 0), g.RecordSentInTurnOf(t0, t0, 0)
			g.GiveBack(t0, 0)
			return w, took
		}, 0, true, t0.Add(delay), false},
		{"the delay after the send before the request still holds", func(g *Gate) (time.Duration, bool) {
			g.RecordSent(t0, 0, 0)
			g.RecordSent(t0.Add(delay), 0, 0)
			// At 1.2 s, the turn of the request sent at 1 s: wait for the
			// delay after the one at 0 s? It is over; go at once.
			return g.CanSendInTurnOf(t0.Add(delay+200*ms), t0.Add(delay), 0), g.RecordSentInTurnOf(t0.Add(delay+200*ms), t0.Add(delay), 0)
		}, 0, true, t0.Add(2*delay + 200*ms), false},
		{"another request was sent since: an ordinary wait, no turn taken", func(g *Gate) (time.Duration, bool) {
			g.RecordSent(t0, 0, 0)
			g.RecordSent(t0.Add(delay), 0, 0)
			return g.CanSendInTurnOf(t0.Add(delay+200*ms), t0, 0), g.RecordSentInTurnOf(t0.Add(delay+200*ms), t0, 0)
		}, 800 * ms, false, t0.Add(2 * delay), true},
		{"a request on the wire has no turn to take", func(g *Gate) (time.Duration, bool) {
			g.RecordSent(t0, 0, 0)
			g.RecordWired(t0, t0.Add(10*ms))
			return g.CanSendInTurnOf(t0.Add(20*ms), t0, 0), g.RecordSentInTurnOf(t0.Add(20*ms), t0, 0)
		}, delay - 10*ms, false, t0.Add(delay + 10*ms), true}, // the send before stays known (the gaps); the wire keeps the turn (Wired)
		{"a request on the wire at its admission instant has no turn to take either", func(g *Gate) (time.Duration, bool) {
			g.RecordSent(t0, 0, 0)
			g.RecordWired(t0, t0) // a coarse clock: the report no later than the admission
			return g.CanSendInTurnOf(t0.Add(20*ms), t0, 0), g.RecordSentInTurnOf(t0.Add(20*ms), t0, 0)
		}, delay - 20*ms, false, t0.Add(delay), true},
		{"Retry-After still holds", func(g *Gate) (time.Duration, bool) {
			g.RecordSent(t0, 0, 0)
			g.Params.BlockedUntil = t0.Add(2 * delay)
			return g.CanSendInTurnOf(t0, t0, 0), false
		}, 2 * delay, false, t0.Add(delay), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &Gate{Params: GateParams{Delay: delay}}
			w, took := c.run(g)
			if w != c.wait || took != c.took {
				t.Errorf("wait %v, took the turn %v; want %v, %v", w, took, c.wait, c.took)
			}
			if got := g.NextByDelay(); !got.Equal(c.next) {
				t.Errorf("NextByDelay = %v, want %v", got.Sub(t0), c.next.Sub(t0))
			}
			if g.State.HasPrev != c.hasPrev {
				t.Errorf("HasPrev = %v, want %v (a taken turn cannot be given back; a wired one keeps the send before it)", g.State.HasPrev, c.hasPrev)
			}
			if want := map[bool]int64{true: 1}[took]; g.State.TurnSends != want {
				t.Errorf("TurnSends = %d, want %d (the sends in another's turn, which a first refusal's burst leaves out)", g.State.TurnSends, want)
			}
		})
	}
}

// The request taking a turn uses the quota amount of the one whose turn it
// takes: a quota of one request per window that the first request used
// lets robots.txt go in its place, and nothing more.
func TestGateTurnOfQuota(t *testing.T) {
	g := &Gate{Params: GateParams{Quota: 1, Window: 10 * sec}}
	g.RecordSent(t0, 1, 0)
	if w := g.CanSendWithoutSlot(t0, 1); w != 10*sec {
		t.Fatalf("an ordinary request waits %v, want the 10 s window", w)
	}
	if w := g.CanSendInTurnOf(t0, t0, 1); w != 0 {
		t.Fatalf("the request taking the turn waits %v, want 0 (the amount is the first one's)", w)
	}
	if !g.RecordSentInTurnOf(t0, t0, 0) {
		t.Fatal("turn not taken")
	}
	if g.State.QuotaUsed != 1 {
		t.Errorf("quota used %v, want 1 (one amount for the two)", g.State.QuotaUsed)
	}
	if w := g.CanSendWithoutSlot(t0.Add(sec), 1); w != 9*sec {
		t.Errorf("the next request waits %v, want 9 s", w)
	}
}

// Through the throttler on the fake clock: a seed admitted by the
// scheduler (Sent), then robots.txt fetched for it under WithTurnOf and
// WithoutSlot: robots.txt is admitted at once, the seed's give-back
// (rescheduled: NotSent) changes nothing, and the seed, sent again, waits
// the delay after robots.txt.
func TestThrottlerAdmitInTurnOf(t *testing.T) {
	th, fc := newTestThrottler(t, "DOWNLOAD_DELAY", 1.0, "CONCURRENT_REQUESTS_PER_DOMAIN", 1)
	sc := scopesOf("a.example")
	th.Sent(t0, sc)
	fc.Set(t0.Add(20 * time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a guard: the fake clock does not move, so a wait would never end
	defer cancel()
	at, err := th.Admit(WithTurnOf(WithoutSlot(ctx), t0), sc)
	if err != nil {
		t.Fatal(err)
	}
	if !at.Equal(t0.Add(20 * time.Millisecond)) {
		t.Fatalf("robots.txt admitted at %v, want at once (20 ms)", at.Sub(t0))
	}
	robots := spider.MustRequest("https://a.example/robots.txt", nil)
	seed := spider.MustRequest("https://a.example/", nil)
	th.Done(ctx, robots, sc, at, nil, nil)
	th.NotSent(ctx, seed, sc, t0) // the seed, rescheduled
	if w := th.Wait(t0.Add(20*time.Millisecond), sc); w != sec {
		t.Errorf("the seed sent again waits %v, want the 1 s delay after robots.txt", w)
	}
	// Without the turn, robots.txt waits for the delay after the seed.
	th2, fc2 := newTestThrottler(t, "DOWNLOAD_DELAY", 1.0)
	th2.Sent(t0, sc)
	fc2.Set(t0.Add(20 * time.Millisecond))
	th2.mu.Lock()
	w := th2.waitLocked(fc2.Now(), sc, true, time.Time{})
	th2.mu.Unlock()
	if w != 980*time.Millisecond {
		t.Errorf("robots.txt without the seed's turn waits %v, want 980 ms", w)
	}
}
