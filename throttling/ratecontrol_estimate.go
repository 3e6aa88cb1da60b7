package throttling

import (
	"math"
	"time"
)

// The rate controller's estimates of a server's limit, at a refusal event
// (ratecontrol.go decides what to do with them).

// rcEstimate is the server's refill rate as measured at a refusal event,
// and its error (requests per second; 0 when not known). Once the server's
// burst is known (the first refusal came soon after the start), it is the
// token-bucket model of the cycle since the latest event
// (rcModelEstimate), combined with the previous estimate when they agree.
// Otherwise it is the larger of two windows:
//
//   - since earlier events (the bucket was empty then and is now): the
//     accepted requests over the time (rcEventEstimate);
//   - the drain: since the rate last was below the estimate, the scope
//     sent faster than the server refills, so it accepted its refill plus
//     what the bucket held (rcDrainEstimate).
//
// Without an earlier event, it is the scope's recent send rate.
func (p *Policy) rcEstimate(now time.Time, g GateState) (est, err float64) {
	if m, u, ok := p.rcModelEstimate(now, g); ok {
		// Cycles that agree are one measurement, more precise; one that
		// does not means the limit changed.
		if p.rcEstErr > 0 && math.Abs(m-p.rcEst) <= 2*(u+p.rcEstErr) {
			w1, w2 := 1/(p.rcEstErr*p.rcEstErr), 1/(u*u)
			m = (p.rcEst*w1 + m*w2) / (w1 + w2)
			u = 1 / math.Sqrt(w1+w2)
		}
		p.debug("rate_estimate").Float64("model", m).Float64("error", u).Msg("throttling: rate estimate")
		p.rcEstErr = u
		return m, u
	}
	p.rcEstErr = 0
	pe, u := p.rcEventEstimate(now, g)
	d := p.rcDrainEstimate(now, g, pe)
	p.debug("rate_estimate").Float64("events", pe).Float64("error", u).Float64("drain", d).Msg("throttling: rate estimates")
	if d > pe {
		return d, 0
	}
	return pe, u
}

// rcModelEstimate measures the rate over the cycle since the latest event
// by simulating the server as a token bucket of the burst seen at the
// first event (rcBurst): empty at the latest event, refilled during its
// pause, then fed the scope's sends of each step since. The refill rate
// that makes it accept what the server accepted is the estimate (the
// accepted count grows with the rate: bisection); its error is one
// request over the cycle. It needs the burst and a cycle of at least a
// step.
func (p *Policy) rcModelEstimate(now time.Time, g GateState) (r, u float64, ok bool) {
	n := len(p.rcSamples)
	if p.rcBurst <= 0 || n == 0 || len(p.rcMarks) == 0 {
		return 0, 0, false
	}
	start := p.rcSamples[0]
	a := accepted(g)
	span := now.Sub(start.At).Seconds()
	if span < p.rcModelMinSpan().Seconds() || a < start.OK {
		return 0, 0, false
	}
	acc := float64(a - start.OK)
	pause := start.At.Sub(p.rcMarks[len(p.rcMarks)-1].At).Seconds()
	type step struct{ dt, sends float64 }
	steps := make([]step, 0, n)
	for i := range n {
		end, sent := now, g.Sends
		if i+1 < n {
			end, sent = p.rcSamples[i+1].At, p.rcSamples[i+1].Sent
		}
		if dt := end.Sub(p.rcSamples[i].At).Seconds(); dt > 0 {
			steps = append(steps, step{dt, float64(sent - p.rcSamples[i].Sent)})
		}
	}
	// accepts is what a bucket refilled at rate accepts of the cycle's
	// sends, and how long before now it last was full (the drain: only
	// that part of the cycle measures the rate; before it the bucket
	// overflowed, and the sends say only that the rate was above them).
	accepts := func(rate float64) (total, drain float64) {
		b := p.burstAt(rate)
		tokens := min(b, rate*max(pause, 0))
		drain = span
		at := 0.0
		for _, s := range steps {
			avail := tokens + rate*s.dt // sends spread over the step meet its refill
			got := min(s.sends, avail)
			tokens = min(b, avail-got)
			total += got
			at += s.dt
			if tokens >= b-0.5 {
				drain = span - at
			}
		}
		return total, drain
	}
	// The server refuses once its bucket holds less than a token, not
	// none: what it accepted is its burst and refill less that
	// remainder, half a request on average (never more than was sent).
	lo, hi, sends := 0.0, 0.0, 0.0
	for _, s := range steps {
		hi = max(hi, s.sends/s.dt)
		sends += s.sends
	}
	acc = max(acc, min(acc+rcRemainder, sends))
	hi = max(hi, acc/span) * 2
	if got, _ := accepts(hi); got < acc {
		p.debug("rate_model").Float64("acc", acc).Float64("max", got).Int("steps", len(steps)).Msg("model fails")
		return 0, 0, false // the model cannot explain it (not a token bucket)
	}
	for range 50 {
		mid := (lo + hi) / 2
		if got, _ := accepts(mid); got < acc {
			lo = mid
		} else {
			hi = mid
		}
	}
	r = (lo + hi) / 2
	// One request (the bucket's content when the drain began is known to
	// about one) over the drain: a cycle that overflowed for three seconds
	// and drained in the last 0.2 s measured the rate to 5 requests/s, not
	// to 1/3 (the first estimate after a growth by doubling).
	_, drain := accepts(r)
	if p.rcRampMarks != nil {
		// The burst, measured during the start ramp, is known now.
		p.rcBurst, p.rcRampMarks = p.burstAt(r), nil
		p.debug("rate_burst").Float64("burst", p.rcBurst).Msg("throttling: the server's burst, from the start ramp")
	}
	return r, 1 / max(drain, rcMinDrain.Seconds()), true
}

// rcModelMinSpan is the shortest cycle the model measures: a step, and a
// quarter of one when the server's burst is one request (rcSingle). Such a
// cycle is the request that leaves at the end of the Retry-After, accepted,
// and the next one, refused a delay later: under a delay of one second,
// jittered, the cycle is as often under a second as over it, and the
// window estimate that measures it instead counts one request over the
// pause as well (a third of a 0.5 requests/s limit, paced at for about ten
// seconds before the probe found the limit again).
func (p *Policy) rcModelMinSpan() time.Duration {
	if p.rcSingle() {
		return rcStep / 4
	}
	return rcStep
}

// rcDrainEstimate finds the drain window's rate by fixed point from est.
func (p *Policy) rcDrainEstimate(now time.Time, g GateState, est float64) float64 {
	if len(p.rcSamples) == 0 {
		return 0
	}
	var r float64
	for range 4 {
		from := -1
		for i := len(p.rcSamples) - 1; i >= 0; i-- {
			if p.rcSamples[i].Rate < est {
				from = i
				break
			}
		}
		if from < 0 || from == len(p.rcSamples)-1 {
			return r // never below, or only in the last step: no window
		}
		m := p.rcSamples[from+1]
		secs := now.Sub(m.At).Seconds()
		a := accepted(g)
		if secs <= 0 || a < m.OK {
			return r
		}
		// The bucket was full when the drain began: take its burst off
		// (or a share when the burst is not known).
		if p.rcBurst > 0 && p.rcRampMarks == nil {
			r = max(0, float64(a-m.OK)-p.rcBurst) / secs
		} else {
			r = rcDrainShare * float64(a-m.OK) / secs
		}
		if r <= est {
			return r
		}
		est = r
	}
	return r
}

// rcEventEstimate is the estimate from the windows between refusal
// events (at each one the bucket was empty). It starts from the window
// since the latest event and extends it back, event by event, while that
// makes it more precise and not wrong: the earlier segment was sent at or
// above the estimate (a segment sent below it let the bucket fill and lose
// its refill, biasing the window low) and the longer window agrees with
// the shorter one within their counting error (one request over the time
// sent; a window reaching back across a drop of the limit disagrees).
// Without an earlier event, it is the scope's recent send rate.
func (p *Policy) rcEventEstimate(now time.Time, g GateState) (r, u float64) {
	n := len(p.rcMarks)
	a := accepted(g)
	if n == 0 || !now.After(p.rcMarks[n-1].At) || a < p.rcMarks[n-1].OK {
		if r := g.SendRate(now); r > 0 {
			return r, r
		}
		return max(p.rcRate, 1), 1
	}
	r, u = p.rcWindow(n-1, now, a)
	for j := n - 2; j >= 0; j-- {
		m := &p.rcMarks[j]
		if now.Sub(m.At) > rcHorizon || a < m.OK || m.Rate < rcClean*r {
			break
		}
		rj, uj := p.rcWindow(j, now, a)
		if math.Abs(rj-r) > 2*u {
			break
		}
		r, u = rj, uj
	}
	if r <= 0 {
		return p.rcRate / 2, 0 // nothing accepted: halve
	}
	return r, u
}

// rcWindow estimates the refill rate over the window from mark j to now,
// and its counting error (one request over the time sent). During a
// pause of p seconds in the window the bucket refilled min(burst, R p)
// and lost the rest (when the burst is known: rcBurst), so accepted = R
// (span - pauses) + the sum of min(burst, R p): solved for R by bisection
// (the left side grows with R).
func (p *Policy) rcWindow(j int, now time.Time, a int64) (r, u float64) {
	from := p.rcMarks[j]
	acc := float64(a - from.OK)
	span := now.Sub(from.At).Seconds()
	var paused []float64
	sent := span
	for _, m := range p.rcMarks[j:] {
		if m.Pause > 0 {
			ps := min(m.Pause, now.Sub(m.At)).Seconds()
			paused = append(paused, ps)
			sent -= ps
		}
	}
	pe := acc / span
	if len(paused) == 0 || sent <= 0 {
		return pe, 1 / span
	}
	if p.rcBurst <= 0 {
		// Each pause refilled up to a burst that is not known: the
		// window's count is that uncertain too, not to one request.
		return pe, (1 + float64(len(paused))*p.burst()) / span
	}
	lhs := func(r float64) float64 {
		v := r * sent
		b := p.burstAt(r) // measured; during the start ramp, solved with the rate
		for _, ps := range paused {
			v += min(b, r*ps)
		}
		return v
	}
	lo, hi := pe, acc/sent
	for range 40 {
		mid := (lo + hi) / 2
		if lhs(mid) < acc {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, 1 / sent
}
