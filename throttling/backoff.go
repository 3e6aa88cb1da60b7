package throttling

import "time"

// backoffState is the backoff part of a ThrottlingScopeManager.
//
// The rules, from "How backoff works":
//
//   - A trigger with a server delay (Retry-After, RateLimit-Reset) or a
//     DelayScope sets a hard minimum: nothing is sent before now+delay.
//     Server delays are capped at the scope's max_delay; DelayScope is not.
//   - Any other trigger takes one step: delay = min(max_delay,
//     max(min_delay, delay*delay_factor)), and the next send waits that
//     delay (with BACKOFF_JITTER) from the trigger.
//   - Burst rule: a trigger from a request sent before the latest step
//     counts toward that step instead of taking another one, so 8
//     concurrent 429s back off once, like TCP reduces once per window.
//   - Recovery: each full window without a trigger drops one step, until
//     the configured delay is back. A trigger restarts the countdown.
type backoffState struct {
	level        int       // steps above the configured delay
	blockedUntil time.Time // hard minimum (server delay, DelayScope)
	notBefore    time.Time // a step's pause, counted from the trigger
	lastTrigger  time.Time
	lastStep     time.Time
	quietMark    time.Time // start of the current quiet window
}

// grow is one backoff step applied to d. A delay already above max_delay
// (a large configured delay) is kept: backoff never speeds a scope up.
func (m *ThrottlingScopeManager) grow(d time.Duration) time.Duration {
	b := &m.cfg.Backoff
	return max(d, min(b.MaxDelay, max(b.MinDelay, time.Duration(float64(d)*b.DelayFactor))))
}

// levelDelay is base after level steps.
func (m *ThrottlingScopeManager) levelDelay(base time.Duration, level int) time.Duration {
	d := base
	for range level {
		next := m.grow(d)
		if next == d {
			break
		}
		d = next
	}
	return d
}

// RecordBackoff implements ScopeManager.
func (m *ThrottlingScopeManager) RecordBackoff(now time.Time, sig BackoffSignal) {
	m.tick(now)
	m.lastTrigger, m.quietMark, m.lastUsed = now, now, now
	m.rampTrigger()
	if sig.Delay > 0 {
		d := sig.Delay
		if !sig.Uncapped {
			d = min(d, m.cfg.Backoff.MaxDelay)
		}
		if until := now.Add(d); until.After(m.blockedUntil) {
			m.blockedUntil = until
		}
		m.debug("hard_delay").Dur("until", m.blockedUntil.Sub(now)).Bool("uncapped", sig.Uncapped).Msg("throttling: scope held back")
		return
	}
	if !sig.SentAt.IsZero() && sig.SentAt.Before(m.lastStep) {
		m.debug("burst").Msg("throttling: trigger from a request sent before the latest step; no new step")
		return
	}
	if m.cfg.Rampup.Enabled && m.rampTolerates() {
		m.debug("rampup_target").Int("window_triggers", m.rampTriggers).Msg("throttling: trigger within the rampup target; holding")
		return
	}
	m.step(now)
}

// step takes one backoff step at now.
func (m *ThrottlingScopeManager) step(now time.Time) {
	m.lastStep = now
	if m.cfg.Rampup.Enabled {
		m.rampDown()
	} else if m.levelDelay(m.baseDelay, m.level+1) != m.levelDelay(m.baseDelay, m.level) {
		m.level++
	}
	if d := m.Delay(); d > 0 {
		pause := time.Duration(float64(d) * jitterFactor(m.cfg.Backoff.Jitter, m.rnd))
		if until := now.Add(pause); until.After(m.notBefore) {
			m.notBefore = until
		}
	}
	m.debug("backoff").Msg("throttling: backoff step")
}

// recoverTick drops one level per full quiet window since the last
// trigger (scopes without rampup).
func (m *ThrottlingScopeManager) recoverTick(now time.Time) {
	if m.level == 0 {
		return
	}
	w := m.cfg.Backoff.Window
	n := int(now.Sub(m.quietMark) / w)
	if n <= 0 {
		return
	}
	n = min(n, m.level)
	m.level -= n
	m.quietMark = m.quietMark.Add(time.Duration(n) * w)
	m.debug("recovery").Int("steps", n).Msg("throttling: quiet window; delay drops")
}
