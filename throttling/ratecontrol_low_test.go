package throttling

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// strictRun is what a crawl of one strict host saw on the fake clock.
type strictRun struct {
	ok, refused, violations int
	lastOK                  time.Duration // from the first send
	gaps                    []time.Duration
	// single: the policy read a burst of one at the first refusal event;
	// bounded: a later event's gap bounded the limit from above.
	single, bounded bool
}

// strictOpts are how a crawl of crawlStrict reaches the host.
type strictOpts struct {
	// robots: the engine's first request, robots.txt, takes the turn of
	// the seed (admitted first, then given back as not sent); the host
	// answers it at once and does not count it.
	robots bool
	// wire: each request reaches the host this long after its admission
	// (a loaded machine, a dial), and the gate is told (RecordWired).
	wire time.Duration
}

// crawlStrict crawls pages pages of a host limited by b, whose refusals
// announce a fixed Retry-After ra, with the scope manager m: the scope
// always has a request to send, answers come after latency (a refusal at
// once), and the clock moves in 1 ms ticks until the last page or limit.
// gaps are the times between consecutive arrivals at the host.
func crawlStrict(m *ThrottlingScopeManager, b *bucket, ra time.Duration, pages int, latency, limit time.Duration, o strictOpts) strictRun {
	type flight struct {
		sent, done time.Time
		ok         bool
	}
	var run strictRun
	var inflight []flight
	var last, windowUntil time.Time
	robots := o.robots
	events := 0
	for now := t0; now.Before(t0.Add(limit)) && run.ok < pages; now = now.Add(time.Millisecond) {
		rest := inflight[:0]
		for _, f := range inflight {
			if f.done.After(now) {
				rest = append(rest, f)
				continue
			}
			o := Outcome{Class: OutcomeOK, Latency: latency, Signal: Signal{SentAt: f.sent, Latency: latency}}
			if !f.ok {
				o = Outcome{Class: OutcomeRefused, Signal: Signal{Trigger: true, SentAt: f.sent, Delay: ra}}
				windowUntil = now.Add(ra)
			}
			m.RecordOutcome(now, o)
			if !f.ok {
				if events++; events == 1 {
					run.single = m.Policy().rcSingle()
				} else if m.Policy().rcGapHi > 0 {
					run.bounded = true
				}
			}
		}
		inflight = rest
		for run.ok+len(inflight) < pages && m.CanSend(now, 0) == 0 {
			m.RecordSent(now, 0)
			if robots {
				robots = false
				if !m.RecordSentInTurnOf(now, now, 0) {
					panic("robots.txt did not take the seed's turn")
				}
				m.RecordOutcome(now, Outcome{Class: OutcomeOK, Signal: Signal{SentAt: now}})
				m.RecordOutcome(now, Outcome{Class: OutcomeNotSent, Signal: Signal{SentAt: now}})
				last = now.Add(o.wire)
				continue
			}
			at := now.Add(o.wire)
			if o.wire > 0 {
				m.RecordWired(at, now)
			}
			if at.Before(windowUntil) {
				run.violations++
			}
			if !last.IsZero() {
				run.gaps = append(run.gaps, at.Sub(last))
			}
			last = at
			ok, _ := b.admit(at)
			done := at.Add(time.Millisecond)
			if ok {
				run.ok++
				run.lastOK = at.Sub(t0)
				done = at.Add(latency)
			} else {
				run.refused++
			}
			inflight = append(inflight, flight{sent: now, done: done, ok: ok})
		}
	}
	return run
}

// A host whose limit is below the configured delay's rate, with a
// Retry-After as long as its interval or longer, is crawled at its limit:
// the controller holds the scope for the Retry-After, then paces it at
// the limit it bounded from the gaps between single requests; few
// refusals, none inside a Retry-After window. (Before, each refusal's
// first guess released the scope within a second, the next request left
// one delay later and was refused, and the estimate measured the hold:
// 50 pages at 0.5/s took three times the limit's 100 s.)
func TestRateControlStrictHostBelowTheDelay(t *testing.T) {
	cases := []struct {
		name       string
		rate       float64
		ra, delay  time.Duration
		maxRefused int
		// maxTime is the last page's time as a multiple of the limit's
		// (pages-1)/R: each refusal costs its Retry-After, which weighs
		// more when it is long against the interval.
		maxTime float64
	}{
		// The broad crawl's strict host: 0.5/s, burst 1, Retry-After 2,
		// under DOWNLOAD_DELAY 1.
		{"R=0.5 RA=2s delay=1s", 0.5, 2 * sec, sec, 8, 1.2},
		// A Retry-After longer than the interval (1/R = 2 s).
		{"R=0.5 RA=5s delay=1s", 0.5, 5 * sec, sec, 8, 1.35},
		// A quarter of the delay's rate.
		{"R=0.25 RA=4s delay=1s", 0.25, 4 * sec, sec, 8, 1.2},
		// Below a shorter delay's rate.
		{"R=1 RA=2s delay=0.25s", 1, 2 * sec, sec / 4, 8, 1.4},
	}
	const pages = 50
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The defaults' jitter: RANDOMIZE_DOWNLOAD_DELAY, BACKOFF_JITTER 0.1.
			m := rcManager(t, "example.com", "DOWNLOAD_DELAY", c.delay.Seconds(), "RANDOMIZE_DOWNLOAD_DELAY", true, "BACKOFF_JITTER", 0.1)
			b := &bucket{rate: c.rate, burst: 1}
			run := crawlStrict(m, b, c.ra, pages, 10*time.Millisecond, 20*time.Minute, strictOpts{})
			ideal := time.Duration(float64(pages-1) / c.rate * float64(time.Second))
			// The steady state: the pace of the last half's sends.
			tail := run.gaps[len(run.gaps)/2:]
			var sum time.Duration
			short := 0
			for _, g := range tail {
				sum += g
				if g < time.Duration(float64(time.Second)/c.rate) {
					short++
				}
			}
			pace := float64(len(tail)) / sum.Seconds()
			rate, est := m.Policy().Rate()
			t.Logf("%d pages in %v (limit's %v), %d refused, steady pace %.3f/s (%d gaps under 1/R), rate %.3f, estimate %.3f",
				run.ok, run.lastOK.Round(time.Millisecond), ideal, run.refused, pace, short, rate, est)
			if run.ok != pages {
				t.Fatalf("%d of %d pages", run.ok, pages)
			}
			if run.violations != 0 {
				t.Errorf("%d requests inside a Retry-After window", run.violations)
			}
			if run.lastOK > time.Duration(c.maxTime*float64(ideal)) {
				t.Errorf("last page at %v, over %.2f times the limit's %v", run.lastOK, c.maxTime, ideal)
			}
			if run.refused > c.maxRefused {
				t.Errorf("%d refusals, want at most %d", run.refused, c.maxRefused)
			}
			if pace < 0.85*c.rate || pace > c.rate {
				t.Errorf("steady pace %.3f/s, want within [0.85, 1] of the limit %.2f", pace, c.rate)
			}
			if math.Abs(est-c.rate) > 0.1*c.rate {
				t.Errorf("estimate %.3f, want within 10%% of the limit %.2f", est, c.rate)
			}
		})
	}
}

// The broad crawl's strict host as the engine reaches it: robots.txt
// first, in its seed's turn (the host does not count it), and every
// request on the wire a little after its admission. The first refusal
// comes two delays after robots.txt, past the two seconds in which a
// scope without a delay measures the server's burst; it still reads a
// burst of one, robots.txt left out, so the gaps between single requests
// bound the limit as they do without robots.txt, and the gaps count from
// when requests reached the wire. (Counted in, or the
// refusal too late to measure, the burst was unknown: the probe grew by
// the refusal budget's stretch, and 20 pages took 52 s over loopback
// sockets for a limit of 38 s.)
func TestRateControlStrictHostAfterRobotsTxt(t *testing.T) {
	const pages = 20
	ideal := time.Duration(float64(pages-1) / 0.5 * float64(time.Second))
	for _, o := range []strictOpts{
		{robots: true},
		{robots: true, wire: 3 * time.Millisecond},
		{wire: 40 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("robots=%v wire=%v", o.robots, o.wire), func(t *testing.T) {
			m := rcManager(t, "example.com", "DOWNLOAD_DELAY", 1.0, "RANDOMIZE_DOWNLOAD_DELAY", true, "BACKOFF_JITTER", 0.1)
			b := &bucket{rate: 0.5, burst: 1}
			run := crawlStrict(m, b, 2*time.Second, pages, 10*time.Millisecond, 10*time.Minute, o)
			short := 0
			for _, g := range run.gaps {
				if g < 500*time.Millisecond {
					short++
				}
			}
			t.Logf("%d pages in %v (limit's %v), %d refused, burst of one %v, gaps %v", run.ok, run.lastOK.Round(time.Millisecond), ideal, run.refused, run.single, run.gaps)
			if run.ok != pages {
				t.Fatalf("%d of %d pages", run.ok, pages)
			}
			if !run.single {
				t.Error("the first refusal did not read a burst of one")
			}
			if !run.bounded {
				t.Error("no refusal's gap bounded the limit")
			}
			if run.violations != 0 {
				t.Errorf("%d requests inside a Retry-After window", run.violations)
			}
			if short != 0 {
				t.Errorf("%d gaps under the delay's jitter range (0.5 s)", short)
			}
			if run.lastOK > time.Duration(1.35*float64(ideal)) {
				t.Errorf("last page at %v, over 1.35 times the limit's %v", run.lastOK, ideal)
			}
			if run.refused > 7 {
				t.Errorf("%d refusals, want at most 7", run.refused)
			}
		})
	}
}

// A strict host's second refusal comes one delay after the request that
// left at the end of the first one's Retry-After: under a jittered delay
// of one second, as often under a second as over. The token-bucket model
// still measures that short cycle when the burst is one request (0.5/s
// here, where the window of one accepted request over the pause and the
// delay read 0.33/s and paced the host at three seconds a page).
func TestRateControlShortCycleAtABurstOfOne(t *testing.T) {
	for _, second := range []time.Duration{900 * time.Millisecond, 1100 * time.Millisecond} {
		t.Run(second.String(), func(t *testing.T) {
			m := rcManager(t, "example.com", "DOWNLOAD_DELAY", 1.0, "RANDOMIZE_DOWNLOAD_DELAY", true, "BACKOFF_JITTER", 0.1)
			ms := time.Millisecond
			send := func(at time.Time, ok bool) {
				m.CanSend(at, 0)
				m.RecordSent(at, 0)
				if ok {
					m.RecordOutcome(at.Add(10*ms), Outcome{Class: OutcomeOK, Latency: 10 * ms, Signal: Signal{SentAt: at, Latency: 10 * ms}})
					return
				}
				m.RecordOutcome(at.Add(ms), Outcome{Class: OutcomeRefused, Signal: Signal{Trigger: true, SentAt: at, Delay: 2 * time.Second}})
			}
			send(t0, true)
			send(t0.Add(900*ms), false) // the first event: a burst of one
			held := t0.Add(2901 * ms)   // the end of its Retry-After
			send(held, true)
			send(held.Add(second), false)
			_, est := m.Policy().Rate()
			if est < 0.45 || est > 0.6 {
				t.Errorf("estimate %.3f after a cycle of %v, want about the limit, 0.5", est, second)
			}
		})
	}
}
