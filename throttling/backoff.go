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
//   - Retry-After pacing (gocrawl's addition, BACKOFF_RETRY_AFTER_PACING):
//     a server delay also sets a pace, a floor of the scope's delay: the
//     interval between sends at the rate the scope had when it was told to
//     wait. When the hard minimum ends the scope resumes at that rate,
//     evenly spaced, instead of releasing its whole concurrency at once
//     (which made a scope with concurrency 8 and no delay answer a token
//     bucket's Retry-After with a new burst every time). A further server
//     delay from a request sent after the pace was set grows the pace by
//     delay_factor; each quiet window divides it by delay_factor.
type backoffState struct {
	level        int       // steps above the configured delay
	blockedUntil time.Time // hard minimum (server delay, DelayScope)
	notBefore    time.Time // a step's pause, counted from the trigger
	lastTrigger  time.Time
	lastStep     time.Time
	quietMark    time.Time     // start of the current quiet window
	pace         time.Duration // Retry-After pacing floor of the delay
	paceSet      time.Time     // when the pace last changed (burst rule)
	paceMark     time.Time     // start of the pace's current quiet window
	rateStart    time.Time     // current one-second bucket of sends
	rateCur      int           // sends in the current bucket
	ratePrev     int           // sends in the bucket before
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
		if !sig.Uncapped && m.cfg.Backoff.RetryAfterPacing {
			m.setPace(now, sig.SentAt)
		}
		m.debug("hard_delay").Stringer("until", m.blockedUntil.Sub(now).Round(time.Millisecond)).Bool("uncapped", sig.Uncapped).Msg("throttling: scope held back")
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

// setPace paces the scope after a server delay. The first time, the pace
// is the interval between sends at the rate the scope was sending when it
// was told to wait (measured over the last one to two seconds): the scope
// resumes at that rate, evenly spaced, instead of releasing its whole
// concurrency at once. A further server delay from a request sent after the
// pace was set means that rate is still too high: the pace grows by
// delay_factor, with the same burst rule as backoff steps.
func (m *ThrottlingScopeManager) setPace(now time.Time, sentAt time.Time) {
	f := m.cfg.Backoff.DelayFactor
	if f <= 1 {
		f = 2
	}
	switch {
	case m.pace == 0:
		m.pace = time.Duration(float64(time.Second) / max(m.sendRate(now), 1e-3))
		m.paceSet = now
	case !sentAt.IsZero() && !sentAt.Before(m.paceSet):
		m.pace = time.Duration(float64(m.pace) * f)
		m.paceSet = now
	}
	m.pace = min(m.pace, m.cfg.Backoff.MaxDelay)
	m.paceMark = now
	m.debug("pace").Stringer("pace", m.pace.Round(time.Millisecond)).Msg("throttling: Retry-After pace")
}

// countSend counts a send in the one-second buckets sendRate reads.
func (m *ThrottlingScopeManager) countSend(now time.Time) {
	m.rollRate(now)
	m.rateCur++
}

func (m *ThrottlingScopeManager) rollRate(now time.Time) {
	switch el := now.Sub(m.rateStart); {
	case m.rateStart.IsZero() || el >= 2*time.Second:
		m.rateStart, m.ratePrev, m.rateCur = now, 0, 0
	case el >= time.Second:
		m.rateStart, m.ratePrev, m.rateCur = m.rateStart.Add(time.Second), m.rateCur, 0
	}
}

// sendRate is the scope's recent send rate, in requests per second.
func (m *ThrottlingScopeManager) sendRate(now time.Time) float64 {
	m.rollRate(now)
	frac := now.Sub(m.rateStart).Seconds()
	return float64(m.ratePrev+m.rateCur) / (1 + frac)
}

// paceTick halves the pace once per full quiet window since the last
// server delay; under a millisecond it is dropped.
func (m *ThrottlingScopeManager) paceTick(now time.Time) {
	if m.pace == 0 {
		return
	}
	w := m.cfg.Backoff.Window
	n := int(now.Sub(m.paceMark) / w)
	if n <= 0 {
		return
	}
	f := m.cfg.Backoff.DelayFactor
	if f <= 1 {
		f = 2 // a delay_factor of 1 never grows a delay, but a pace must still recover
	}
	for range n {
		m.pace = time.Duration(float64(m.pace) / f)
		if m.pace < time.Millisecond {
			m.pace = 0
			break
		}
	}
	m.paceMark = m.paceMark.Add(time.Duration(n) * w)
	m.debug("pace_recovery").Stringer("pace", m.pace.Round(time.Millisecond)).Msg("throttling: quiet window; Retry-After pace drops")
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
