package throttling

import "time"

// ReadsRateLimit reports whether scope's rate controller reads RateLimit
// headers (THROTTLING_RATE_CONTROL, the scope's rate_control key): then
// the answer that carries them paces the scope from then on, and requests
// admitted before it was known (while robots.txt was being fetched) are
// better sent again through the gate (the RobotsTxt middleware
// reschedules them).
func (t *Throttler) ReadsRateLimit(scope string) bool {
	return t.cfg.Scope(scope).RateControl.Enabled
}

// StartRamps reports whether scope's requests are paced by the rate
// controller's start ramp now (rate control on, a concurrency limit, no
// rampup, no quota, a delay under 50 ms, and the scope's ramp not over: no refusal event, no
// announced rate, less than 300 ms since it started): the robots.txt
// middleware then sends the requests that waited for robots.txt through
// the gate again instead of together. A robots.txt answer that comes
// after the ramp (a slow robots.txt, or fetched again a day later) has
// nothing to pace them with, and they go on. A scope whose state is not
// held (new, or evicted) ramps from its first request. With
// Options.Shared the answer is a fresh policy's, from the configuration
// (the scope's state is in the shared store).
func (t *Throttler) StartRamps(scope string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.scopes[scope]; ok && t.shared == nil {
		m, ok := e.mgr.(*ThrottlingScopeManager)
		return ok && m.policy.rcRampsAt(t.clock.Now())
	}
	// Not held here: what a fresh policy of the scope would do (the
	// policy's own rule, not a copy of it).
	return NewPolicy(ScopeEnv{Config: t.cfg.Scope(scope), Rand: t.rnd}).rcRampsAt(t.clock.Now())
}

// SetRobotsDelay applies a robots.txt Crawl-delay to scope (the host's
// scope), when ROBOTSTXT_OBEY and THROTTLING_ROBOTSTXT_OBEY are on: the
// scope's concurrency becomes 1 and its delay the Crawl-delay, capped at
// THROTTLING_ROBOTSTXT_MAX_DELAY, unless the configured delay
// (DOWNLOAD_DELAY) is longer: a Crawl-delay only raises it. A THROTTLING_SCOPES entry that sets
// concurrency or delay keeps its values; when they differ from the
// robots.txt ones a warning is logged once, unless the entry sets
// ignore_robots_txt. The Crawl-delay is remembered even when the scope's
// state is evicted, and is part of Snapshot.
//
// It reports whether the delay was applied (false when the settings turn
// it off). Calling it again with the same delay does nothing.
func (t *Throttler) SetRobotsDelay(scope string, crawlDelay time.Duration) bool {
	if !t.cfg.RobotsObey || crawlDelay < 0 {
		return false
	}
	d := min(crawlDelay, t.cfg.RobotsMaxDelay)
	if t.shared != nil {
		// Written to the scope's shared policy (outside the lock: it is a
		// round trip), so that it holds for every worker.
		t.mu.Lock()
		prev, ok := t.robots[scope]
		t.robots[scope] = d
		t.boundRobotsLocked(scope)
		t.warnRobotsLocked(t.cfg.Scope(scope), d, crawlDelay)
		t.mu.Unlock()
		if !ok || prev != d {
			t.setRobotsDelayShared(scope, d)
		}
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if prev, ok := t.robots[scope]; ok && prev == d {
		return true
	}
	t.robots[scope] = d
	t.boundRobotsLocked(scope)
	cfg := t.cfg.Scope(scope)
	t.warnRobotsLocked(cfg, d, crawlDelay)
	if e, ok := t.scopes[scope]; ok {
		applyRobots(e.mgr, cfg, d)
		t.notifyLocked(Scopes{{Name: scope}})
	}
	t.dbg.Info().Str("scope", scope).Stringer("delay", d).Str("reason", "robots.txt").
		Msg("throttling: robots.txt Crawl-delay applied")
	return true
}

// RobotsDelay returns the Crawl-delay applied to scope, if any.
func (t *Throttler) RobotsDelay(scope string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.robots[scope]
	return d, ok
}

// applyRobots applies a Crawl-delay d to the manager m of a scope of cfg:
// concurrency 1 and delay d, except where THROTTLING_SCOPES sets them. A
// Crawl-delay only ever raises the delay (set_base_delay in Scrapy's
// throttling design is raise-only): below the configured delay
// (DOWNLOAD_DELAY) it changes nothing, so robots.txt never makes a crawl
// faster.
func applyRobots(m ScopeManager, cfg ScopeConfig, d time.Duration) {
	if !cfg.ExplicitConcurrency {
		m.SetConcurrency(1)
	}
	if !cfg.ExplicitDelay {
		m.SetBaseDelay(max(cfg.Delay, d))
	}
}

func (t *Throttler) warnRobotsLocked(cfg ScopeConfig, d, crawlDelay time.Duration) {
	if cfg.IgnoreRobotsTxt || t.warned[cfg.Name] {
		return
	}
	concOff := cfg.ExplicitConcurrency && cfg.Concurrency != 1
	delayOff := cfg.ExplicitDelay && cfg.Delay != d
	if !concOff && !delayOff {
		return
	}
	t.warned[cfg.Name] = true
	ev := t.log.Warn().Str("scope", cfg.Name).Stringer("crawl_delay", crawlDelay).
		Stringer("robots_delay", d)
	if cfg.ExplicitConcurrency {
		ev = ev.Int("concurrency", cfg.Concurrency)
	}
	if cfg.ExplicitDelay {
		ev = ev.Stringer("delay", cfg.Delay)
	}
	ev.Msg("THROTTLING_SCOPES disagrees with robots.txt Crawl-delay (which asks for concurrency 1 and this delay); " +
		"keeping THROTTLING_SCOPES. Set ignore_robots_txt: true on the scope to silence this warning")
}

// boundRobotsLocked keeps the Crawl-delay map within the scope limit (it
// only holds hosts whose robots.txt has a Crawl-delay).
func (t *Throttler) boundRobotsLocked(keep string) {
	limit := t.cfg.ScopeLimit
	if limit <= 0 || len(t.robots) <= limit {
		return
	}
	for name := range t.robots {
		if len(t.robots) <= limit {
			return
		}
		if _, held := t.scopes[name]; !held && name != keep {
			delete(t.robots, name)
		}
	}
}
