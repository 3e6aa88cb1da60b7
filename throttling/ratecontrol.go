package throttling

import (
	"math"
	"time"
)

// rateState is the rate controller of a Policy (THROTTLING_RATE_CONTROL,
// the scope's rate_control key). It decides how fast a scope goes inside
// its configured rules (delay, concurrency, quota, Crawl-delay, start
// rate), from the evidence servers give:
//
//   - A refusal is a moment the server's token bucket (or window) was
//     empty. Between two such moments the server accepted exactly what it
//     refilled, so the accepted responses between two refusals, over the
//     time between them, is the server's refill rate: the estimate.
//     Refusals to requests sent before the latest decrease belong to the
//     same event (the burst rule).
//   - On each refusal event the rate drops to just below the estimate
//     (multiplicative decrease to beta × estimate, after the Retry-After
//     pause if any), then probes upward along a cubic curve (as TCP
//     CUBIC): flat near the estimate, so the scope holds the limit it
//     found, and faster and faster away from it, so a limit that rose is
//     found again within a minute; a limit that dropped is followed at the
//     next refusals.
//   - RateLimit headers pace before the first refusal: a quota policy (q
//     per w) caps the rate at q/w; "remaining" caps the requests in flight
//     and, near zero, is a refusal that costs nothing (a soft event);
//     "remaining 0" also holds the scope until the reset.
//   - A start ramp, not a slow start: a new scope uses its configured
//     concurrency from its first request (as in Scrapy's throttling
//     design, PR #6931), but until the first refusal its sends are paced
//     at a rate that starts at rcRampRate and doubles every rcRampStep
//     (ratecontrol_ramp.go), so that a server's small bucket empties
//     with about one request in flight instead of a burst of
//     concurrency − bucket refusals.

// Which refusals are evidence: server delays (Retry-After, RateLimit
// reset) on any scope; bare refusals (no header) only on rampup scopes,
// the spec's tool for finding a limit without headers. A bare refusal on
// another scope takes the spec's exponential backoff step.
//
// The rate is piecewise constant: it moves along the curve in steps of
// rcStep, so that GateParams.ValidUntil can name the next change.
type rateState struct {
	rcOn        bool      // the controller paces the scope
	rcRate      float64   // current rate, requests per second
	rcBase      float64   // the rate set at the latest event (beta × estimate): the curve's floor
	rcBeta      float64   // that event's beta
	rcEst       float64   // estimated limit of the server, requests per second
	rcCap       float64   // rate announced by the server (RateLimit-Policy); 0 = none
	rcEpoch     time.Time // start of the probe curve: the end of the latest decrease's pause
	rcNext      time.Time // next step along the curve
	rcEvent     time.Time // latest decrease (refusals to requests sent before it are the same event)
	rcMarks     []RateMark
	rcSamples   []RateMark // one per step while pacing: the rate in force, and the accepted count
	rcGrowing   float64    // the estimate is a guess: grow by this factor per step until the next event (0 = no)
	rcStart     time.Time  // the controller's first tick after the scope's first send
	rcBurst     float64    // the server's burst as seen at the first event (0 = unknown)
	rcRampStart time.Time  // the start ramp's origin: the scope's first tick
	rcRamp      float64    // the start ramp's rate in force (0 = not ramping)
	rcRampUntil time.Time  // and its next step
	rcRampMarks []RateMark // the ramp's sends, to the first event if it came during the ramp (rcBurst then also counts a refill: burstAt)
	rcEstErr    float64    // the estimate's error (requests per second); 0 = unknown
	rcLate      float64    // how much slower than the rate in force the scope sends (late wake-ups); 1 = on time
	rcSendLimit int64      // RateLimit remaining as a send budget: GateParams.SendLimit, until rcRemUntil
	rcRemUntil  time.Time  // the server's reset of that remaining quota
}

// RateMark is a moment in the rate controller's memory: a refusal event
// or a step of the rate: when, how many responses the scope's gate had
// counted as accepted then, and (for steps) the rate in force from then.
type RateMark struct {
	At   time.Time `json:"at"`
	OK   int64     `json:"ok"`
	Sent int64     `json:"sent,omitempty"`
	Rate float64   `json:"rate,omitempty"`
	// Pause is how long the event held the scope (Retry-After).
	Pause time.Duration `json:"pause_ns,omitempty"`
}

// The controller's constants. Chosen on the simulated site (token buckets
// of 2, 10 and 50 requests/s; docs/performance.md): see docs/throttling.md,
// "Rate control".
const (
	// rcBetaPause, rcBetaSoft and rcBetaBare are where the rate drops on a
	// refusal event, as a fraction of the estimate: after a Retry-After
	// (the pause already let the bucket refill), after a soft event
	// (RateLimit remaining near zero, nothing refused), after a bare
	// refusal (the bucket is empty and nothing else tells).
	rcBetaPause = 0.99
	rcBetaSoft  = 0.97
	rcBetaBare  = 0.9
	// rcCubic shapes the probe: rate = est × (1 + c (t − K)³), K the time
	// it takes to come back to the estimate.
	rcCubic = 1e-5
	// rcLateDemand: a step whose sends reached this share of the rate
	// had requests to send (its shortfall is lateness); rcLateMax bounds
	// the compensation.
	rcLateDemand = 0.7
	rcLateMax    = 1.2
	// rcBudget is the fewest requests between two probes (each costs a
	// refusal): at low rates the curve is stretched to respect it. The
	// curve's cycle is a model, and sends jittered around it drain the
	// bucket sooner, so the probes come about every 0.7 × rcBudget
	// requests: every 85 s at 2/s, every 45 s at 4/s, where a limit that
	// rose must be found within a minute. (With the burst measured to
	// the remainder, 230 gave six refusals of 508 requests at R = 2 in
	// most runs, 1.18 %; 250 gives five, 0.99 %.)
	rcBudget = 250
	// rcMinCycle is the shortest probe cycle at any rate: at high rates
	// the budget's cycle would be short (24 s at 50/s), and each probe
	// costs a pause (Retry-After) worth (R - burst) requests, 2 % of the
	// time at 50/s. A limit that rose is still found within a minute:
	// past the estimate the search grows by rcGrowRise per step.
	rcMinCycle = 40 * time.Second
	// rcStep is how often the rate moves along the curve; rcGuessStep
	// how often it doubles while the estimate is a first guess (each
	// step below the limit is lost throughput: at R = 50 from a guess of
	// 9, half-second steps find the limit in 1.5 s rather than 3).
	rcStep      = time.Second
	rcGuessStep = 500 * time.Millisecond
	// rcHorizon is how far back estimate windows may start; rcClean the
	// share of the estimate a segment must have been sent at to extend a
	// window over it.
	rcHorizon = 2 * time.Minute
	rcClean   = 0.9
	// rcMarkN refusal events and rcSampleN steps are remembered.
	rcMarkN   = 8
	rcSampleN = 40
	// rcGrow multiplies the rate at each step while the estimate is a
	// first guess (the first refusal event, before a second one measures),
	// rcGrowUnsure while it comes from a window too short to be precise
	// (its counting error above rcSure of it).
	rcGrow       = 2
	rcGrowUnsure = 1.1
	// rcRiseBursts: once the probe has sent this many bursts above the
	// estimate without a refusal, the limit rose: the rate then grows by
	// rcGrowRise per step until the next refusal.
	rcRiseBursts = 2
	rcGrowRise   = 1.15
	rcSure       = 0.02
	// rcGuess: at low rates, where each probe's refusal weighs more
	// (rcStretch > 1), only an estimate this unsure grows fast.
	rcGuess = 0.1
	// rcDrainShare of the drain window's rate is trusted when the burst
	// is not known (it counts the tokens the bucket held when the drain
	// began).
	rcDrainShare = 0.95
	// rcBurstWithin: a first refusal this soon after the scope's start
	// measures the server's burst.
	rcBurstWithin = 2 * time.Second
	// rcRemainder is what a server's token bucket holds, on average,
	// when it refuses: less than a token, so half of one. Without it
	// every measurement of what a bucket accepted reads half a request
	// short, and the estimates of the refill and of the burst with it.
	rcRemainder = 0.5
	// rcDefaultBurst is the burst assumed before one is measured (a
	// common default of servers' token buckets).
	rcDefaultBurst = 5
	// rcMinDrain bounds the error of a model estimate whose drain was
	// shorter (a refusal at once).
	rcMinDrain = 50 * time.Millisecond

	// rcRelease: once the rate is this many times above both the
	// estimate and what the scope actually sends, the limit is gone (or
	// demand is far below it) and the controller lets the scope go
	// unpaced.
	rcRelease = 4
	// rcReleaseQuiet: and not before this long after the latest refusal
	// event. A first guess doubles every rcGuessStep and is four times the
	// estimate within a second: released then, a slow host's scope went
	// unpaced after each refusal, was refused again one configured delay
	// later, and measured its own hold as the next estimate.
	rcReleaseQuiet = rcHorizon
	// rcCapShare of an announced rate is used, a margin for jitter.
	rcCapShare = 0.98
)

// rcBurstWithin is how soon after the scope's start a first refusal
// measures the server's burst: rcBurstWithin, and two of the configured
// delay's gaps at the top of its jitter range (1.5 times the delay) more,
// so that a host paced by a delay (no start ramp) is measured too: its
// first page follows robots.txt one delay later and its second page one
// more, where a burst of one refuses. The sends being a delay apart, the
// bucket refills little between them.
func (p *Policy) rcBurstWithin() time.Duration {
	return rcBurstWithin + 3*p.baseDelay
}

// rcEnabled reports whether the scope has a rate controller.
func (p *Policy) rcEnabled() bool { return p.cfg.RateControl.Enabled }

// accepted counts the scope's requests sent and not refused (nor failed):
// accepted, or still in flight, by the time they were sent. Windows
// between refusal events count with it, so that an answer arriving after
// an event is counted with its send.
func accepted(g GateState) int64 { return g.Sends - g.Refused - g.Other }

// rcTick moves the rate along its curve and expires what time ends.
func (p *Policy) rcTick(now time.Time, g GateState) {
	if !p.rcEnabled() {
		return
	}
	if p.rcStart.IsZero() && g.Sends > 0 {
		p.rcStart = now
	}
	if !p.rcRemUntil.IsZero() && !now.Before(p.rcRemUntil) {
		p.rcSendLimit, p.rcRemUntil = 0, time.Time{}
	}
	p.rcRampTick(now, g)
	if !p.rcOn || now.Before(p.rcNext) {
		return
	}
	step := p.rcBoundary(now)
	p.rcNext = p.rcNextBoundary(step)
	p.rcMeasureLate(step, g)
	p.rcGapStep(g)
	r := p.rcRateAt(step)
	if p.rcCap == 0 && now.Sub(p.rcEvent) >= rcReleaseQuiet && r >= rcRelease*max(p.rcEst, p.rcBase, g.SendRate(now)) {
		p.rcOn, p.rcRate, p.rcGrowing = false, 0, 0
		p.rcSamples = p.rcSamples[:0]
		p.debug("rate_release").Msg("throttling: no refusal for long; the rate controller lets the scope go")
		return
	}
	p.rcRate = r
	p.rcSamples = append(p.rcSamples, RateMark{At: step, OK: accepted(g), Sent: g.Sends, Rate: r})
	if len(p.rcSamples) > rcSampleN {
		p.rcSamples = coarsen(p.rcSamples)
	}
}

// rcCycle is the probe curve's own cycle, in seconds (from a refusal to
// the next, which the probe provokes): its plateau K plus the time its
// excess over the limit takes to drain the bucket (the burst: known, else
// rcDefaultBurst). It needs an estimate (rcEst > 0).
func (p *Policy) rcCycle() float64 {
	k := math.Cbrt((1 - p.rcBeta) / rcCubic)
	return k + math.Pow(4*p.burst()/(p.rcEst*rcCubic), 0.25)
}

// rcStretch slows the probe curve down at low rates, so that a cycle
// holds at least rcBudget requests: each probe costs a refusal.
func (p *Policy) rcStretch() float64 {
	if p.rcEst <= 0 {
		return 1
	}
	return max(1, rcBudget/p.rcEst/p.rcCycle())
}

// rcCurveStretch is the probe curve's stretch: rcStretch, and at least
// enough that a cycle lasts rcMinCycle.
func (p *Policy) rcCurveStretch() float64 {
	if p.rcEst <= 0 {
		return 1
	}
	return max(p.rcStretch(), rcMinCycle.Seconds()/p.rcCycle())
}

// burst is the server's burst as measured, else rcDefaultBurst.
func (p *Policy) burst() float64 {
	if p.rcBurst > 0 && p.rcRampMarks == nil {
		return p.rcBurst
	}
	return rcDefaultBurst
}

// rcMeasureLate compares the sends since the previous step with the rate
// in force then. The gate counts each delay from the actual last send, so
// every late wake-up of the crawler (a loaded machine) is lost time: when
// the scope sent at least rcLateDemand of the rate (it had requests to
// send), the shortfall is lateness, which rcInterval makes up for (an
// average over steps, at most rcLateMax).
func (p *Policy) rcMeasureLate(step time.Time, g GateState) {
	if p.rcLate < 1 {
		p.rcLate = 1
	}
	n := len(p.rcSamples)
	if n == 0 {
		return
	}
	prev := p.rcSamples[n-1]
	dt := step.Sub(prev.At).Seconds()
	if dt <= 0 || prev.Rate <= 0 || prev.Sent == 0 && prev.OK == 0 {
		return
	}
	actual := float64(g.Sends-prev.Sent) / dt
	want := prev.Rate * p.rcLate // what the gate was asked for
	if actual < rcLateDemand*prev.Rate || actual <= 0 {
		return // demand, not the pace, held the scope back
	}
	// Asking for want gave actual: asking for the rate times want/actual
	// gives the rate.
	p.rcLate = min(max(0.8*p.rcLate+0.2*(want/actual), 1), rcLateMax)
}

// rcBoundary is the latest time at or before t where the rate changes:
// the epoch or a step after it.
func (p *Policy) rcBoundary(t time.Time) time.Time {
	x := t.Sub(p.rcEpoch)
	if x < 0 {
		return p.rcEpoch
	}
	st := p.rcStepLen()
	return p.rcEpoch.Add(x / st * st)
}

// rcStepLen is the time between two rate changes: rcGuessStep while the
// rate doubles from a first guess, else rcStep.
func (p *Policy) rcStepLen() time.Duration {
	if p.rcGrowing >= rcGrow {
		return rcGuessStep
	}
	return rcStep
}

// rcNextBoundary is the first rate change after boundary b.
func (p *Policy) rcNextBoundary(b time.Time) time.Time {
	st := p.rcStepLen()
	return p.rcEpoch.Add((b.Sub(p.rcEpoch)/st + 1) * st)
}

// rcRateAt is the rate in force at boundary t: growing from the event's
// rate while the estimate is a guess, else along the probe curve (never
// below the event's rate); never above an announced rate.
func (p *Policy) rcRateAt(t time.Time) float64 {
	x := t.Sub(p.rcEpoch).Seconds()
	var r float64
	switch {
	case x < 0:
		r = p.rcBase
	default:
		sigma := p.rcCurveStretch()
		xs := x / sigma
		k := math.Cbrt((1 - p.rcBeta) / rcCubic)
		r = max(p.rcBase, p.rcEst*(1+rcCubic*math.Pow(xs-k, 3)))
		// Past the estimate the probe has sent est × c (xs-K)⁴ / 4 × sigma
		// more than the limit allows; twice the burst without a refusal
		// means the limit rose: search fast from there.
		if u := math.Pow(rcRiseBursts*p.burst()*4/(sigma*p.rcEst*rcCubic), 0.25); xs > k+u {
			from := p.rcEst * (1 + rcCubic*math.Pow(u, 3))
			steps := math.Floor((x - sigma*(k+u)) / rcStep.Seconds())
			r = max(r, from*math.Pow(rcGrowRise, steps))
		}
		if p.rcGrowing > 1 {
			steps := math.Floor(x / p.rcStepLen().Seconds())
			switch {
			case p.rcGapFast:
				steps /= max(1, 1/p.rcBase) // per request interval: a few requests to the next event
			case p.rcGrowing < rcGrow:
				steps /= p.rcStretch() // an unsure estimate grows no faster than the refusal budget allows
			}
			r = max(r, p.rcBase*math.Pow(p.rcGrowing, steps))
		}
	}
	if p.rcGapFast && p.rcGapCap > 0 {
		r = min(r, max(p.rcBase, rcBetaPause*p.rcGapCap))
	}
	if p.rcCap > 0 {
		r = min(r, rcCapShare*p.rcCap)
	}
	return r
}

// coarsen drops one sample, keeping the first (the cycle's start) and the
// last: the one between the two most alike rates, whose interval merges
// into the one before with the least loss (samples hold counters, so the
// merged interval's counts stay exact).
func coarsen(s []RateMark) []RateMark {
	best, bestD := 1, math.Inf(1)
	for i := 1; i+1 < len(s); i++ {
		if d := math.Abs(s[i].Rate - s[i-1].Rate); d < bestD {
			best, bestD = i, d
		}
	}
	return append(s[:best], s[best+1:]...)
}

// rcRefusal handles a refusal event at now of a request sent at sentAt;
// pause is the server's delay (0 for a bare refusal), soft an event that
// refused nothing (RateLimit remaining near zero).
func (p *Policy) rcRefusal(now, sentAt time.Time, pause time.Duration, soft bool, g GateState) {
	if !sentAt.IsZero() && !sentAt.After(p.rcEvent) {
		// Sent before the latest decrease: the same event. The mark
		// counted the request as accepted (it was in flight).
		if n := len(p.rcMarks); n > 0 && !soft {
			p.rcMarks[n-1].OK--
			if len(p.rcSamples) > 0 && p.rcSamples[0].At.Equal(p.rcEpoch) {
				p.rcSamples[0].OK--
			}
			if n == 1 && p.rcBurst > 0 {
				p.rcBurst--
			}
		}
		return
	}
	first := !p.rcOn
	est, estErr := p.rcEstimate(now, g)
	if !soft {
		p.rcGapRefusal(sentAt, g)
		if e, u := p.rcGapBound(est, estErr); e != est {
			est, estErr, p.rcEstErr = e, u, u
		}
	}
	if soft && !first && p.rcGrowing >= rcGrow {
		// Still growing from a first guess: the scope sent the whole step
		// before this one, at rate/rcGrow, without an event, so the limit
		// is about that or more. A window estimate below it counts a
		// hold (RateLimit remaining 0 until a reset in whole seconds) or
		// a pause more than the bucket's refill during it.
		est = max(est, p.rcRate/rcGrow)
	}
	if first && len(p.rcMarks) == 0 && now.Sub(p.rcStart) < p.rcBurstWithin() {
		// The first refusal soon after the start: what was accepted by
		// then (answered or in flight) is about the server's burst; later
		// refusals of the same burst take theirs off. robots.txt is left
		// out: a host's page limit seldom counts it, and counted, a
		// burst of one read two, so that the gap bounds of single
		// requests never applied (docs/throttling.md). A server that
		// does count it refuses sooner than the bounds expect, and the
		// next refusal's upper bound corrects them. The gate counts
		// them (TurnSends), so that a shared gate's policy, which runs
		// in whichever worker has the feedback, reads them too.
		p.rcBurst = float64(max(accepted(g)-g.TurnSends, 1))
		p.rcRampMarks = p.rcRampEvent(now, g)
		est = max(est, p.rcRampGuess(now))
	}
	p.rcMarks = append(p.rcMarks, RateMark{At: now, OK: accepted(g), Pause: pause})
	if len(p.rcMarks) > rcMarkN {
		p.rcMarks = append(p.rcMarks[:0], p.rcMarks[len(p.rcMarks)-rcMarkN:]...)
	}
	beta := rcBetaBare
	switch {
	case pause > 0:
		beta = rcBetaPause
	case soft:
		beta = rcBetaSoft
	}
	if p.rcCap > 0 {
		est = min(est, p.rcCap)
	}
	minRate := 1 / max(p.cfg.Backoff.MaxDelay.Seconds(), 1)
	p.rcEst = max(est, minRate)
	p.rcBase, p.rcBeta = max(beta*p.rcEst, minRate), beta
	p.rcMarks[len(p.rcMarks)-1].Rate = p.rcBase
	p.rcEvent = now
	p.rcEpoch = now.Add(pause)
	p.rcOn, p.rcGrowing = true, 0
	p.rcGapFast, p.rcGapCap = false, 0
	switch {
	case !first && !soft && p.rcGapProbe():
		// A low limit bounded by single requests, not closely yet: grow
		// by rcGrowUnsure per step until the next refusal.
		p.rcGrowing, p.rcGapFast, p.rcGapCap = rcGrowUnsure, true, p.rcGapHi
	case first:
		// A first guess (the first burst's refusals say little): grow
		// fast, up to the announced rate if any.
		p.rcGrowing = rcGrow
	case p.rcCap > 0:
		// The server announced its rate: an estimate below it (a short
		// window) grows back to it, slowly.
		if p.rcEst < rcCapShare*p.rcCap {
			p.rcGrowing = rcGrowUnsure
		}
	case estErr > rcSure*p.rcEst && (estErr > rcGuess*p.rcEst || p.rcStretch() <= 1):
		// Grow by half the relative error per step: the limit is
		// probably within two errors of the estimate, reached in four
		// steps.
		p.rcGrowing = 1 + min(rcGrowUnsure-1, estErr/p.rcEst/2)
	}
	p.rcRate = p.rcRateAt(p.rcEpoch)
	p.rcNext = p.rcNextBoundary(p.rcEpoch) // the step's length depends on rcGrowing
	p.rcSamples = append(p.rcSamples[:0], RateMark{At: p.rcEpoch, OK: accepted(g), Sent: g.Sends, Rate: p.rcRate})
	p.debug("rate_decrease").Float64("estimate", p.rcEst).Float64("rate", p.rcRate).Bool("soft", soft).
		Dur("pause", pause).Msg("throttling: refusal event; rate set below the estimated limit")
}

// rcRateLimit applies what RateLimit headers said at now.
func (p *Policy) rcRateLimit(now, sentAt time.Time, rl *RateLimit, g GateState) {
	if rate := rl.Rate(); rate > 0 {
		p.rcSetCap(now, rate)
	}
	if !rl.HasRemaining {
		return
	}
	until := rl.Reset
	if until <= 0 {
		until = time.Second
	}
	// A reset in whole seconds overstates a token bucket's wait for its
	// next token: with an estimate of the refill, the quota holds for one
	// token's time (then the pace at the estimate takes over; a window
	// server answers a request past its quota with its own Retry-After).
	until = min(until, p.cfg.Backoff.MaxDelay)
	if p.rcOn && p.rcEst > 0 && (p.rcCap > 0 || p.rcGrowing < rcGrow) { // measured or announced, not a first guess
		until = min(until, time.Duration(float64(time.Second)/p.rcEst))
	}
	// What the server still accepts before its reset, less what is in
	// flight (it may have been counted after this answer): a send budget
	// that waits for the reset, not for a free slot. Requests in flight
	// that end without reaching the server (OutcomeOther: rescheduled)
	// give theirs back, since the gate counts Reached.
	left := int64(math.Floor(max(rl.Remaining, 0))) - int64(g.Active)
	p.rcSendLimit, p.rcRemUntil = g.Reached()+left, now.Add(until)
	var pause time.Duration
	if rl.Remaining < 1 && rl.Reset > 0 {
		// Nothing left until the reset: hold the scope, as a Retry-After.
		pause = until
		if u := now.Add(pause); u.After(p.blockedUntil) {
			p.blockedUntil = u
		}
	}
	if rl.Remaining < 2 && (rl.Limit == 0 || rl.Limit > 2) {
		p.rcRefusal(now, sentAt, pause, true, g)
	}
}

// rcSetCap records a rate announced by the server and paces at once.
func (p *Policy) rcSetCap(now time.Time, rate float64) {
	if rate == p.rcCap {
		return
	}
	p.rcCap = rate
	if !p.rcOn || p.rcEst > rate || p.rcRate > rcCapShare*rate {
		p.rcOn, p.rcEst, p.rcBase, p.rcBeta = true, rate, rcCapShare*rate, rcBetaPause
		p.rcGrowing = 0
		k := math.Cbrt((1 - rcBetaPause) / rcCubic)
		p.rcEpoch = now.Add(-time.Duration(k * float64(time.Second)))
		p.rcRate = p.rcRateAt(p.rcBoundary(now))
		p.rcNext = p.rcNextBoundary(p.rcBoundary(now))
	}
	p.debug("rate_cap").Float64("rate", rate).Msg("throttling: the server announced its rate (RateLimit-Policy)")
}

// rcInterval is the controller's minimum time between sends (0 when it
// does not pace).
func (p *Policy) rcInterval() time.Duration {
	if !p.rcOn && p.rcRamp > 0 {
		return time.Duration(float64(time.Second) / p.rcRamp)
	}
	if !p.rcOn || p.rcRate <= 0 {
		return 0
	}
	late := max(p.rcLate, 1)
	if p.rcSingle() {
		late = 1
	}
	return time.Duration(float64(time.Second) / (p.rcRate * late))
}

// rcValidUntil is the controller's next time-based change (zero: none).
func (p *Policy) rcValidUntil() (t time.Time) {
	if p.rcRampStart.IsZero() && p.rcRamps() {
		// Before its first Tick the ramp has not started: the parameters
		// are stale at once, so that a gate kept elsewhere (a distributed
		// crawl's, whose first parameters come from an untouched policy:
		// Throttler.InitialParams) has the policy ticked, which starts the
		// ramp, before its first send. As rampup does.
		return time.Time{}.Add(rcRampStep)
	}
	if p.rcOn {
		t = p.rcNext
	} else if p.rcRamp > 0 {
		t = p.rcRampUntil
	}
	if !p.rcRemUntil.IsZero() && (t.IsZero() || p.rcRemUntil.Before(t)) {
		t = p.rcRemUntil
	}
	return t
}

// rcValidUntilOK is the gate's answer count at which the policy's
// parameters go stale (zero: never by count). The rate controller has no
// slow start (docs/throttling.md, "The start ramp, not a slow start": its
// start ramp is timed), so no decision of its depends on the number of
// answers and it returns 0. GateParams.ValidUntilOK
// stays for a rule that would change the parameters with answers: in
// memory every call ticks the policy, while a distributed gate holds its
// parameters until that count and has them refreshed, so that such a rule
// would count the answers of every worker of the job.
func (p *Policy) rcValidUntilOK() int64 {
	return 0
}
