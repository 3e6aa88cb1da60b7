package throttling

import (
	"math"
	"time"
)

// The rate controller's start ramp (docs/throttling.md, "The start
// ramp, not a slow start").
//
// Before a server has refused anything, a limited host and an unlimited
// one answer alike. A scope that sends its whole concurrency at once
// pours it into the server's bucket: with 8 slots and a bucket of 5
// tokens (one taken by robots.txt), 4 requests are refused before
// anything is known, 0.8 % of a 500-page crawl at 2 requests/s. So,
// until its first refusal event, a scope's sends are paced at a rate
// that starts at rcRampRate and doubles every rcRampStep; at rcRampEnd
// the ramp is over. A small bucket then empties while about one request
// is in flight (one refusal, not four), and the concurrency is still
// the configured one from the first request (a server slow to answer
// gets its 8 requests within 150 ms: this is not a slow start that
// waits for answers).
//
// It only adds a minimum interval between sends, like the rest of the
// controller: a configured delay or Crawl-delay longer than the ramp's
// interval wins. It does not apply where the scope's pace is known or
// lifted: a scope with a quota (the user gave its budget), a rate the
// server announced (RateLimit-Policy), no concurrency limit (0: the user
// lifted the per-scope limit, as the throughput benchmarks do), rampup
// (which starts low on its own), a delay of 50 ms or more (it paces more
// than the ramp would), rate control off.
const (
	// rcRampRate is the ramp's first rate (requests per second).
	rcRampRate = 20.0
	// rcRampStep is how often it doubles: 20, 40, 80... 640/s within
	// 250 ms, where 8 slots at 12 ms a request are the limit anyway.
	rcRampStep = 50 * time.Millisecond
	// rcRampEnd ends the ramp.
	rcRampEnd = 1000.0
	// rcRampBurstShare: a first refusal during the ramp measured the
	// burst plus the refill since the scope's first send; the burst is
	// taken as at least this share of what was accepted by then (the
	// ramp doubles each step, so when the bucket emptied the scope sent
	// at up to twice the refill, and the bucket held at least what
	// refilled while it drained).
	rcRampBurstShare = 0.5
	// rcRampGuessShare bounds the first guess from the ramp's sends
	// (rcRampGuess): a quarter of the ramp's rate when the first refusal
	// came. (Half gave the same at R = 10 and 50 on fake time; the
	// smaller bound is the safer one for a larger bucket.)
	rcRampGuessShare = 0.25
	// rcRampMarkN bounds the sends remembered during the ramp.
	rcRampMarkN = 64
)

// rcRamps reports whether the start ramp applies to the scope now.
func (p *Policy) rcRamps() bool {
	return p.rcEnabled() && !p.rcOn && len(p.rcMarks) == 0 && p.rcCap == 0 &&
		p.conc > 0 && !p.cfg.Rampup.Enabled && p.cfg.Quota <= 0 &&
		p.baseDelay < time.Duration(float64(time.Second)/rcRampRate) // a longer delay paces more than the ramp would
}

// rcRampTick sets the ramp's rate at now and remembers the sends since
// the previous tick (what the bucket got, to measure its burst at the
// first event).
func (p *Policy) rcRampTick(now time.Time, g GateState) {
	p.rcRamp, p.rcRampUntil = 0, time.Time{}
	if !p.rcRamps() {
		if p.rcBurst <= 0 {
			// No first-event burst to measure with them (the scope
			// stopped ramping otherwise: an announced rate, a first
			// refusal after the ramp): not kept nor persisted.
			p.rcRampMarks = nil
		}
		return
	}
	if p.rcRampStart.IsZero() {
		p.rcRampStart = now
	}
	if now.Sub(p.rcRampStart) > rcBurstWithin {
		// Past the window in which a first refusal measures the burst
		// (the ramp itself ended long before): the sends are no longer
		// needed, and a scope that never refuses does nothing more here
		// on each of its sends.
		p.rcRampMarks = nil
		return
	}
	steps, r := p.rcRampStep(now)
	if r < rcRampEnd {
		p.rcRamp, p.rcRampUntil = r, p.rcRampStart.Add((steps+1)*rcRampStep)
	}
	// The sends are kept a little past the ramp, to the end of that
	// window: a large bucket empties just after the ramp, and what it
	// accepted by then also counts the ramp's refill.
	if g.Sends == 0 {
		return
	}
	if n := len(p.rcRampMarks); n == 0 {
		p.rcRampMarks = append(p.rcRampMarks, RateMark{At: g.LastSent, Sent: g.Sends})
	} else if g.Sends != p.rcRampMarks[n-1].Sent && n < rcRampMarkN {
		p.rcRampMarks = append(p.rcRampMarks, RateMark{At: g.LastSent, Sent: g.Sends})
	}
}

// rcRampStep is the ramp's step at now (from rcRampStart) and its rate;
// at rcRampEnd or above the ramp is over.
func (p *Policy) rcRampStep(now time.Time) (time.Duration, float64) {
	steps := max(now.Sub(p.rcRampStart), 0) / rcRampStep // a clock behind the start (a resumed job on another machine) is at the first step
	return steps, rcRampRate * math.Pow(2, float64(steps))
}

// rcRampsAt reports whether the start ramp paces the scope at now: it
// applies and is not over (a scope not ticked yet ramps from its first
// tick).
func (p *Policy) rcRampsAt(now time.Time) bool {
	if !p.rcRamps() {
		return false
	}
	if p.rcRampStart.IsZero() {
		return true
	}
	_, r := p.rcRampStep(now)
	return r < rcRampEnd
}

// rcRampEvent is what the first refusal event keeps of the ramp: its
// sends to now when the event came during the ramp or soon after it,
// within rcBurstWithin of its start (the event's accepted count then
// includes a refill: burstAt), else nil.
func (p *Policy) rcRampEvent(now time.Time, g GateState) []RateMark {
	if len(p.rcRampMarks) == 0 {
		return nil
	}
	m := append(p.rcRampMarks, RateMark{At: now, Sent: g.Sends})
	// Sends that never reached the server (Other: mostly the requests
	// admitted while robots.txt was fetched, then rescheduled) are taken
	// off the earliest marks, where those were admitted: counted as sends,
	// they made the bucket look smaller than it is.
	for i := range m {
		m[i].Sent = max(0, m[i].Sent-g.Other)
	}
	return m
}

// rcRampGuess is a first guess of the server's rate at a first refusal
// during the ramp (0: none): what the ramp's sends had accepted beyond
// rcDefaultBurst (as burst assumes before a measure), over the time they
// took, and never above rcRampGuessShare of the ramp's rate then (the
// bucket emptied, so the scope sent faster than it refills). A bucket
// larger than 5 makes the guess high, within that bound; the second
// refusal event measures both. The scope's send rate, the other guess,
// reads the ramp's first steps: a fifth of the limit at R = 50, whose
// doubling from there cost a second at the start.
func (p *Policy) rcRampGuess(now time.Time) float64 {
	span := rampSpread(p.rcRampMarks)
	if len(p.rcRampMarks) < 3 || span <= 0 {
		return 0
	}
	_, ramp := p.rcRampStep(now)
	return min((p.rcBurst+rcRemainder-rcDefaultBurst)/span, rcRampGuessShare*ramp)
}

// rampSpread is the time, in seconds, from the first of the ramp's sends
// to the last before the event (marks as rcRampEvent keeps them: the last
// one is the event's).
func rampSpread(m []RateMark) float64 {
	if len(m) < 2 {
		return 0
	}
	return m[len(m)-2].At.Sub(m[0].At).Seconds()
}

// burstAt is the server's burst if its refill rate is rate. A first
// refusal during the start ramp came after the bucket had refilled for a
// while (less what overflowed while the ramp sent below the refill), so
// what it accepted by then (rcBurst) is the burst plus that refill: the
// burst is the bucket size that, fed the ramp's sends (rcRampMarks),
// accepts as much, and at least rcRampBurstShare of it. The first model
// estimate (the next refusal event) solves for both and keeps the burst.
func (p *Policy) burstAt(rate float64) float64 {
	m := p.rcRampMarks
	if len(m) == 0 {
		return p.rcBurst
	}
	accepts := func(b float64) float64 {
		// The sends to the first mark arrive at once (the ramp's first,
		// or a burst the gate admitted before the ramp began: a
		// distributed scope's first policy write can come after it): a
		// full bucket accepts at most b of them.
		total := min(b, float64(m[0].Sent))
		tokens := b - total
		for i := 1; i < len(m); i++ {
			// A mark's sends went out at its time (the latest send of
			// the tick): the bucket refilled up to then, and what it
			// refilled while full was lost.
			avail := min(b, tokens+rate*m[i].At.Sub(m[i-1].At).Seconds())
			got := min(float64(m[i].Sent-m[i-1].Sent), max(avail, 0))
			tokens = avail - got
			total += got
		}
		return total
	}
	// The server refused once its bucket held less than a token, not
	// none: it accepted the burst and the refill less that remainder.
	// The remainder is half a token on average once the sends spread
	// over a token's refill or more, and none for sends that all came
	// at once (a bucket of whole tokens): rcRemainder scaled by the
	// refill between the first send and the last before the event.
	want := p.rcBurst + min(rcRemainder, rate*rampSpread(m)/2)
	lo, hi := max(1, rcRampBurstShare*p.rcBurst), max(1, want)
	if accepts(lo) >= want {
		return lo
	}
	for range 30 {
		mid := (lo + hi) / 2
		if accepts(mid) < want {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
