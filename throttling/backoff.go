package throttling

import "time"

// backoffState is the backoff part of a Policy.
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
}

// grow is one backoff step applied to d. A delay already above max_delay
// (a large configured delay) is kept: backoff never speeds a scope up.
func (p *Policy) grow(d time.Duration) time.Duration {
	b := &p.cfg.Backoff
	return max(d, min(b.MaxDelay, max(b.MinDelay, time.Duration(float64(d)*b.DelayFactor))))
}

// levelDelay is base after level steps.
func (p *Policy) levelDelay(base time.Duration, level int) time.Duration {
	d := base
	for range level {
		next := p.grow(d)
		if next == d {
			break
		}
		d = next
	}
	return d
}

// backoff applies a trigger or server delay at now.
func (p *Policy) backoff(now time.Time, sig Signal, g GateState) {
	p.lastTrigger, p.quietMark = now, now
	p.rampTrigger()
	if sig.Delay > 0 {
		d := sig.Delay
		if !sig.Uncapped {
			d = min(d, p.cfg.Backoff.MaxDelay)
		}
		if until := now.Add(d); until.After(p.blockedUntil) {
			p.blockedUntil = until
		}
		switch {
		case sig.Uncapped || !p.cfg.Backoff.RetryAfterPacing:
		case p.rcEnabled():
			p.rcRefusal(now, sig.SentAt, d, false, g)
		default:
			p.setPace(now, sig.SentAt, g)
		}
		p.debug("hard_delay").Stringer("until", p.blockedUntil.Sub(now).Round(time.Millisecond)).Bool("uncapped", sig.Uncapped).Msg("throttling: scope held back")
		return
	}
	if p.cfg.Rampup.Enabled && p.rcEnabled() {
		// Rampup finds a limit without headers: with the rate controller,
		// a bare refusal is its evidence rather than a backoff step.
		p.rcRefusal(now, sig.SentAt, 0, false, g)
		return
	}
	if !sig.SentAt.IsZero() && sig.SentAt.Before(p.lastStep) {
		p.debug("burst").Msg("throttling: trigger from a request sent before the latest step; no new step")
		return
	}
	if p.cfg.Rampup.Enabled && p.rampTolerates() {
		p.debug("rampup_target").Int("window_triggers", p.rampTriggers).Msg("throttling: trigger within the rampup target; holding")
		return
	}
	p.step(now)
}

// step takes one backoff step at now.
func (p *Policy) step(now time.Time) {
	p.lastStep = now
	if p.cfg.Rampup.Enabled {
		p.rampDown()
	} else if p.levelDelay(p.baseDelay, p.level+1) != p.levelDelay(p.baseDelay, p.level) {
		p.level++
	}
	if d := p.Delay(); d > 0 {
		pause := time.Duration(float64(d) * jitterFactor(p.cfg.Backoff.Jitter, p.rnd))
		if until := now.Add(pause); until.After(p.notBefore) {
			p.notBefore = until
		}
	}
	p.debug("backoff").Msg("throttling: backoff step")
}

// setPace paces the scope after a server delay. The first time, the pace
// is the interval between sends at the rate the scope was sending when it
// was told to wait (measured over the last one to two seconds): the scope
// resumes at that rate, evenly spaced, instead of releasing its whole
// concurrency at once. A further server delay from a request sent after the
// pace was set means that rate is still too high: the pace grows by
// delay_factor, with the same burst rule as backoff steps.
func (p *Policy) setPace(now time.Time, sentAt time.Time, g GateState) {
	f := p.cfg.Backoff.DelayFactor
	if f <= 1 {
		f = 2
	}
	switch {
	case p.pace == 0:
		p.pace = time.Duration(float64(time.Second) / max(g.SendRate(now), 1e-3))
		p.paceSet = now
	case !sentAt.IsZero() && !sentAt.Before(p.paceSet):
		p.pace = time.Duration(float64(p.pace) * f)
		p.paceSet = now
	}
	p.pace = min(p.pace, p.cfg.Backoff.MaxDelay)
	p.paceMark = now
	p.debug("pace").Stringer("pace", p.pace.Round(time.Millisecond)).Msg("throttling: Retry-After pace")
}

// paceTick halves the pace once per full quiet window since the last
// server delay; under a millisecond it is dropped.
func (p *Policy) paceTick(now time.Time) {
	if p.pace == 0 {
		return
	}
	w := p.cfg.Backoff.Window
	n := int(now.Sub(p.paceMark) / w)
	if n <= 0 {
		return
	}
	f := p.cfg.Backoff.DelayFactor
	if f <= 1 {
		f = 2 // a delay_factor of 1 never grows a delay, but a pace must still recover
	}
	for range n {
		p.pace = time.Duration(float64(p.pace) / f)
		if p.pace < time.Millisecond {
			p.pace = 0
			break
		}
	}
	p.paceMark = p.paceMark.Add(time.Duration(n) * w)
	p.debug("pace_recovery").Stringer("pace", p.pace.Round(time.Millisecond)).Msg("throttling: quiet window; Retry-After pace drops")
}

// recoverTick drops one level per full quiet window since the last
// trigger (scopes without rampup).
func (p *Policy) recoverTick(now time.Time) {
	if p.level == 0 {
		return
	}
	w := p.cfg.Backoff.Window
	n := int(now.Sub(p.quietMark) / w)
	if n <= 0 {
		return
	}
	n = min(n, p.level)
	p.level -= n
	p.quietMark = p.quietMark.Add(time.Duration(n) * w)
	p.debug("recovery").Int("steps", n).Msg("throttling: quiet window; delay drops")
}
