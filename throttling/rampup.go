package throttling

import "time"

// rampState is the rampup part of a ThrottlingScopeManager.
//
// Rampup probes for the fastest rate a scope tolerates. Time is cut into
// windows of BACKOFF_WINDOW (the scope's backoff window), starting at the
// scope's first send. At the end of each window:
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
type rampState struct {
	rampStart    time.Time
	rampTriggers int
	rampSends    int
}

func (m *ThrottlingScopeManager) rampSent(now time.Time) {
	if !m.cfg.Rampup.Enabled {
		return
	}
	if m.rampStart.IsZero() {
		m.rampStart = now
	}
	m.rampSends++
}

func (m *ThrottlingScopeManager) rampTrigger() {
	if m.cfg.Rampup.Enabled {
		m.rampTriggers++
	}
}

// rampTolerates reports whether the current window's triggers (this one
// included) are within the target.
func (m *ThrottlingScopeManager) rampTolerates() bool {
	return m.rampTriggers <= m.cfg.Rampup.Target[1]
}

// rampTick evaluates the windows that ended before now.
func (m *ThrottlingScopeManager) rampTick(now time.Time) {
	if m.rampStart.IsZero() {
		return
	}
	w := m.cfg.Backoff.Window
	for !now.Before(m.rampStart.Add(w)) {
		low := m.cfg.Rampup.Target[0]
		switch {
		case m.rampSends > 0 && (m.rampTriggers < low || m.rampTriggers == 0):
			m.rampUp()
		case m.rampSends > 0:
			m.debug("rampup_hold").Int("window_triggers", m.rampTriggers).Msg("throttling: rampup window at target; holding")
		}
		m.rampTriggers, m.rampSends = 0, 0
		m.rampStart = m.rampStart.Add(w)
		if idle := now.Sub(m.rampStart) / w; idle > 0 {
			m.rampStart = m.rampStart.Add(idle * w) // idle windows neither ramp nor hold
		}
	}
}

// rampUp takes one rampup step: lower the delay, then raise concurrency.
func (m *ThrottlingScopeManager) rampUp() {
	r := &m.cfg.Rampup
	switch {
	case m.rampDelay > m.rampFloor:
		d := time.Duration(float64(m.rampDelay) * r.DelayFactor)
		if d < max(m.rampFloor, time.Millisecond) {
			d = m.rampFloor
		}
		m.rampDelay = d
	case m.baseConc == 0 || m.conc < m.baseConc:
		m.conc++
	default:
		return
	}
	if m.level > 0 {
		m.level--
	}
	m.debug("rampup").Msg("throttling: quiet window; rampup step")
}

// rampDown is a backoff step for a rampup scope: give back concurrency
// first, then grow the delay.
func (m *ThrottlingScopeManager) rampDown() {
	floor := max(m.cfg.MinConcurrency, 1)
	if m.conc > floor {
		m.conc = max(floor, int(float64(m.conc)/m.cfg.Backoff.DelayFactor))
		m.level++
		return
	}
	if d := m.grow(m.rampDelay); d != m.rampDelay {
		m.rampDelay = d
		m.level++
	}
}
