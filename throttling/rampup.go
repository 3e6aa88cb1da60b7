package throttling

import "time"

// rampState is the rampup part of a Policy.
//
// Rampup probes for the fastest rate a scope tolerates. Time is cut into
// windows of BACKOFF_WINDOW (the scope's backoff window), starting when the
// scope is first used. At the end of each window:
//
//   - fewer triggers than the target's low bound (and at least one send):
//     one step up: the delay is multiplied by the rampup delay_factor
//     (never below min_delay; below 1 ms it snaps to min_delay), and once
//     the delay is at its floor the concurrency limit grows by one, from
//     min_concurrency up to the scope's concurrency (no ceiling when the
//     scope does not set one);
//   - between low and high triggers: hold;
//   - more than high: the triggers beyond high already took normal
//     backoff steps (first giving back concurrency, down to
//     min_concurrency, by BACKOFF_DELAY_FACTOR; then growing the delay).
//
// Within a window, the first high triggers are tolerated without a step:
// that is what makes the scope settle at about the target number of
// rate-limit responses per window instead of oscillating.
//
// The policy counts the window's triggers itself (OnFeedback) and its sends
// from the gate's send counter, against the mark taken when the window
// started.
type rampState struct {
	rampStart     time.Time
	rampTriggers  int
	rampSendsMark int64 // the gate's Sends when the current window started
}

func (p *Policy) rampTrigger() {
	if p.cfg.Rampup.Enabled {
		p.rampTriggers++
	}
}

// rampTolerates reports whether the current window's triggers (this one
// included) are within the target.
func (p *Policy) rampTolerates() bool {
	return p.rampTriggers <= p.cfg.Rampup.Target[1]
}

// rampTick evaluates the windows that ended before now. The first window
// starts at the first tick (the scope's first use: in memory, the CanSend
// before its first send), so that its end is known in advance
// (GateParams.ValidUntil); windows without sends neither ramp nor hold.
func (p *Policy) rampTick(now time.Time, g GateState) {
	if p.rampStart.IsZero() {
		p.rampStart, p.rampSendsMark = now, g.Sends
		return
	}
	w := p.cfg.Backoff.Window
	for !now.Before(p.rampStart.Add(w)) {
		low := p.cfg.Rampup.Target[0]
		sends := since(g.Sends, &p.rampSendsMark)
		switch {
		case sends > 0 && (p.rampTriggers < low || p.rampTriggers == 0):
			p.rampUp()
		case sends > 0:
			p.debug("rampup_hold").Int("window_triggers", p.rampTriggers).Msg("throttling: rampup window at target; holding")
		}
		p.rampTriggers, p.rampSendsMark = 0, g.Sends
		p.rampStart = p.rampStart.Add(w)
		if idle := now.Sub(p.rampStart) / w; idle > 0 {
			p.rampStart = p.rampStart.Add(idle * w) // idle windows neither ramp nor hold
		}
	}
}

// rampUp takes one rampup step: lower the delay, then raise concurrency.
func (p *Policy) rampUp() {
	r := &p.cfg.Rampup
	switch {
	case p.rampDelay > p.rampFloor:
		d := time.Duration(float64(p.rampDelay) * r.DelayFactor)
		if d < max(p.rampFloor, time.Millisecond) {
			d = p.rampFloor
		}
		p.rampDelay = d
	case p.baseConc == 0 || p.conc < p.baseConc:
		p.conc++
	default:
		return
	}
	if p.level > 0 {
		p.level--
	}
	p.debug("rampup").Msg("throttling: quiet window; rampup step")
}

// rampDown is a backoff step for a rampup scope: give back concurrency
// first, then grow the delay.
func (p *Policy) rampDown() {
	floor := max(p.cfg.MinConcurrency, 1)
	if p.conc > floor {
		p.conc = max(floor, int(float64(p.conc)/p.cfg.Backoff.DelayFactor))
		p.level++
		return
	}
	if d := p.grow(p.rampDelay); d != p.rampDelay {
		p.rampDelay = d
		p.level++
	}
}
