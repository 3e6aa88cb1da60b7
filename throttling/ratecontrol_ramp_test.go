package throttling

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// A scope whose first burst went out before the ramp started (a
// distributed scope: its policy is first written by the first refusal,
// after the gate admitted its whole concurrency) remembers that burst as
// the ramp's first mark. A bucket accepts at most its size of sends that
// arrive at once, so the burst is what the server accepted (5 of 8), not
// the lower bound of half of it.
func TestRateControlRampBurstOfSendsAtOnce(t *testing.T) {
	p := rcManager(t, "example.com", "RANDOMIZE_DOWNLOAD_DELAY", false).Policy()
	at := t0.Add(100 * time.Millisecond)
	g := GateState{Sends: 8, LastSent: t0, Active: 8}
	for i := range 3 { // 8 sent at t0 unpaced; 3 refused with Retry-After
		g.Active--
		g.Refused++
		p.OnFeedback(at, Signal{Trigger: true, SentAt: t0, Delay: time.Second}, g)
		if i == 0 && len(p.rcRampMarks) == 0 {
			t.Fatal("the first refusal kept no ramp marks; the test no longer covers burstAt")
		}
	}
	if p.rcBurst != 5 {
		t.Fatalf("burst at the first event: %v, want 5 (8 sent, 3 refused)", p.rcBurst)
	}
	for _, rate := range []float64{0.5, 2, 10} {
		if b := p.burstAt(rate); math.Abs(b-5) > 0.01 {
			t.Errorf("burstAt(%v) = %.3f, want 5: 8 sends at once into a bucket of b accept min(b, 8)", rate, b)
		}
	}
}

// The ramp's marks are kept only to measure the burst of a first refusal
// during the ramp. A scope that stops ramping otherwise (here the server
// announces its rate, RateLimit-Policy, before any refusal) drops them:
// they would be persisted with every policy write and never used.
func TestRateControlRampMarksDroppedWithoutABurst(t *testing.T) {
	m := rcManager(t, "example.com", "RANDOMIZE_DOWNLOAD_DELAY", false)
	at := t0
	for range 4 {
		if w := m.CanSend(at, 0); w > 0 {
			at = at.Add(w)
		}
		m.RecordSent(at, 0)
	}
	m.tick(at.Add(time.Millisecond))
	if len(m.Policy().rcRampMarks) == 0 {
		t.Fatal("no ramp marks after 4 paced sends; the test no longer covers them")
	}
	rl := &RateLimit{Quota: 10, Window: time.Second}
	m.RecordOutcome(at.Add(10*time.Millisecond), Outcome{Class: OutcomeOK, Signal: Signal{SentAt: t0, RateLimit: rl}})
	m.tick(at.Add(20 * time.Millisecond))
	if s := m.Policy().State(); len(s.RateRampMarks) != 0 || s.RateBurst != 0 {
		t.Errorf("announced rate before any refusal: state keeps ramp marks %v (burst %v), want none", s.RateRampMarks, s.RateBurst)
	}
}

// StartRamps answers for the scope's ramp now, not for its configuration:
// the robots.txt middleware reschedules the requests that waited for
// robots.txt only while they can still go out at the ramp's pace. A
// robots.txt answer after the ramp (slow, or fetched again a day later)
// has nothing to pace them with.
func TestStartRampsFollowsTheScopesRamp(t *testing.T) {
	sent := func(th *Throttler, host string, at time.Time) Scopes {
		t.Helper()
		sc, err := th.Scopes(context.Background(), spider.MustRequest("http://"+host+"/", nil))
		if err != nil {
			t.Fatal(err)
		}
		th.Wait(at, sc)
		th.Sent(at, sc)
		return sc
	}
	th, fc := newTestThrottler(t, "THROTTLING_RATE_CONTROL", true)
	if !th.StartRamps("a.test") {
		t.Fatal("a scope not seen yet: StartRamps false, want true (it ramps from its first request)")
	}
	sent(th, "a.test", t0)
	fc.Advance(100 * time.Millisecond)
	if !th.StartRamps("a.test") {
		t.Fatal("100 ms after the first send: StartRamps false, want true")
	}
	fc.Advance(250 * time.Millisecond)
	if th.StartRamps("a.test") {
		t.Error("350 ms after the first send (the ramp is over): StartRamps true, want false")
	}

	// A refusal event ends the ramp (the controller paces from it).
	req := spider.MustRequest("http://b.test/", nil)
	sc := sent(th, "b.test", fc.Now())
	res := &spider.Response{Request: req, URL: req.URL, Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}}}
	th.Done(context.Background(), req, sc, fc.Now(), res, nil)
	if th.StartRamps("b.test") {
		t.Error("after a refusal event: StartRamps true, want false")
	}

	off, _ := newTestThrottler(t, "THROTTLING_RATE_CONTROL", false)
	if off.StartRamps("a.test") {
		t.Error("rate control off: StartRamps true, want false")
	}
}

// A saved state whose ramp marks are an empty list (a record written by
// hand or by another tool: this package omits them) reads as no marks:
// the burst is the saved one, not a model of sends that are not there.
func TestRateControlRampMarksEmptyState(t *testing.T) {
	p := rcManager(t, "example.com").Policy()
	if err := p.SetState(PolicyState{Version: PolicyStateVersion, RateOn: true, Rate: 4, RateEstimate: 4,
		RateBurst: 5, RateRampMarks: []RateMark{}}); err != nil {
		t.Fatal(err)
	}
	if b := p.burstAt(4); b != 5 {
		t.Errorf("burstAt with empty saved ramp marks: %v, want the saved burst 5", b)
	}
	if b := p.burst(); b != 5 {
		t.Errorf("burst with empty saved ramp marks: %v, want the saved burst 5", b)
	}
}

// The burst measured at a first refusal during the ramp counts what
// reached the server. Here the scope's first request was admitted at t0,
// waited for robots.txt and was rescheduled (OutcomeNotSent: Other); then
// six requests went out at the ramp's pace, 50 to 114 ms, into a bucket
// of 5 refilled at 10/s, which accepted five and refused the sixth with
// 0.64 of a token. Each of three errors made the bucket look 0.5
// smaller (4.4 for 5), and the burst is found to 0.15 without them: the
// rescheduled request taken as a send, the refill of the 50 ms before
// the first real send counted although the bucket was full then, and the
// accepted count taken for the burst and refill when the refusal left a
// remainder (half a token on average).
func TestRateControlRampBurstCountsWhatReachedTheServer(t *testing.T) {
	p := rcManager(t, "example.com", "RANDOMIZE_DOWNLOAD_DELAY", false).Policy()
	p.rcRampStart = t0
	p.rcStart = t0
	p.rcRampMarks = []RateMark{{At: t0, Sent: 1}}
	for i, ms := range []int{50, 65, 78, 93, 105, 114} {
		p.rcRampMarks = append(p.rcRampMarks, RateMark{At: t0.Add(time.Duration(ms) * time.Millisecond), Sent: int64(i + 2)})
	}
	at := t0.Add(120 * time.Millisecond)
	g := GateState{Sends: 7, OK: 5, Refused: 1, Other: 1, LastSent: t0.Add(114 * time.Millisecond)}
	p.OnFeedback(at, Signal{Trigger: true, SentAt: g.LastSent, Delay: time.Second}, g)
	if p.rcBurst != 5 || len(p.rcRampMarks) == 0 {
		t.Fatalf("after the first refusal: burst %v, %d ramp marks; want 5 accepted and the ramp's marks", p.rcBurst, len(p.rcRampMarks))
	}
	if b := p.burstAt(10); math.Abs(b-5) > 0.25 {
		t.Errorf("burstAt(10) = %.2f, want 5 within 0.25 (4.86 expected)", b)
	}
}

// A first refusal during the ramp gives a first guess from what the
// ramp's sends had accepted beyond a common burst of 5 (bounded by a
// quarter of the ramp's rate then), not only the scope's send rate, which
// reads the ramp's first steps: at R = 50 that was 9/s, and the doubling
// from there cost a second of the crawl (guesses here without it: 6.1,
// 10.2 and 15.6). The guess may come out a little above the limit (the
// requests in flight at the event are counted as accepted until they are
// refused), which the next event corrects from a long drain.
func TestRateControlFirstGuessFromTheRamp(t *testing.T) {
	for _, c := range []struct{ rate, low float64 }{{10, 0.8}, {50, 0.6}, {100, 0.5}} {
		m := rcManager(t, "example.com")
		b := &bucket{rate: c.rate, burst: 5, ra: true}
		simulate(m, b, 600*time.Millisecond, 10*time.Millisecond) // the first refusal, inside its pause
		p := m.Policy()
		if len(p.rcMarks) != 1 {
			t.Fatalf("R=%v: %d refusal events in 600 ms, want 1", c.rate, len(p.rcMarks))
		}
		if p.rcEst < c.low*c.rate || p.rcEst > 1.2*c.rate {
			t.Errorf("R=%v: first guess %.1f, want %.0f to 120 %% of the limit", c.rate, p.rcEst, 100*c.low)
		}
	}
}
