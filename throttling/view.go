package throttling

import (
	"maps"
	"slices"
	"time"
)

// ScopeView is a read-only picture of one throttling scope as of a moment
// (At): its configuration and its run-time state, with everything the
// passing of time implies already applied (recovery after quiet windows,
// rampup window evaluation, quota window reset, Retry-After pace
// recovery). It is what a crawl report or a shared-state backend reads;
// Throttler.View and Throttler.Views build it.
//
// It is a plain value, JSON-friendly: durations are float64 seconds, as in
// the settings, and times are time.Time values left out of the JSON when
// zero ("no such moment").
type ScopeView struct {
	// Scope is the scope's name.
	Scope string `json:"scope"`
	// Kind is the scope's kind: "domain" (a host name), "ip" (an IP
	// address scope) or "custom" (any other name).
	Kind string `json:"kind"`
	// At is the time the view describes: the throttler clock's now.
	At time.Time `json:"at"`
	// InMemory is true when the throttler holds the scope's state. When
	// false, the scope was never used or its idle state was evicted, and
	// the view describes the state it would be created with from its
	// configuration (and robots.txt Crawl-delay); viewing it does not
	// create it.
	InMemory bool `json:"in_memory"`
	// FromConfig is true when the run-time fields below were derived from
	// the configuration instead of being reported by the scope's manager:
	// always for a scope not in memory (it would start exactly so), and for
	// a scope whose custom manager does not implement Viewer, whose
	// backoff, in-flight count and quota use are then unknown (shown as 0).
	FromConfig bool `json:"from_config,omitempty"`
	// Manager is the registered name of the scope's manager.
	Manager string `json:"manager"`
	// Configured is true when THROTTLING_SCOPES has an entry for the
	// scope; otherwise its configuration is the default for its kind.
	Configured bool `json:"configured,omitempty"`

	// ConfiguredDelay is the configured delay between two sends, in
	// seconds (THROTTLING_SCOPES "delay", else DOWNLOAD_DELAY for domain
	// and IP scopes), before any robots.txt Crawl-delay.
	ConfiguredDelay float64 `json:"configured_delay"`
	// ConfiguredConcurrency is the configured concurrency limit (0 =
	// unlimited; with rampup, the ceiling rampup grows towards).
	ConfiguredConcurrency int `json:"configured_concurrency"`
	// Quota is the amount the scope's requests may consume per quota
	// window; 0 = no quota.
	Quota float64 `json:"quota,omitempty"`
	// QuotaWindow is the length of the quota window, in seconds; set only
	// with a quota.
	QuotaWindow float64 `json:"quota_window,omitempty"`
	// Rampup is true when the scope probes for its fastest tolerated rate.
	Rampup bool `json:"rampup,omitempty"`
	// RobotsDelay is the robots.txt Crawl-delay applied to the scope, in
	// seconds, already capped at THROTTLING_ROBOTSTXT_MAX_DELAY.
	RobotsDelay float64 `json:"robots_delay,omitempty"`
	// HasRobots is true when a robots.txt Crawl-delay applies (even 0).
	HasRobots bool `json:"has_robots,omitempty"`

	// Delay is the scope's current delay between two sends, in seconds,
	// before jitter: the configured (or Crawl-delay) delay after backoff,
	// recovery, rampup and the Retry-After pace.
	Delay float64 `json:"delay"`
	// Pace is the Retry-After pacing floor of Delay, in seconds
	// (BACKOFF_RETRY_AFTER_PACING); 0 = none.
	Pace float64 `json:"pace,omitempty"`
	// BackoffLevel is the number of backoff steps not yet recovered; 0
	// when not backing off.
	BackoffLevel int `json:"backoff_level"`
	// Concurrency is the current concurrency limit (0 = unlimited): the
	// configured one, 1 under a robots.txt Crawl-delay, or what rampup and
	// backoff made of it.
	Concurrency int `json:"concurrency"`
	// InFlight is the number of the scope's requests sent and not yet
	// completed.
	InFlight int `json:"in_flight"`
	// SlotsFull is true when InFlight has reached Concurrency: the next
	// request waits for one of them to complete.
	SlotsFull bool `json:"slots_full,omitempty"`
	// Wait is how long, in seconds from At, until the scope lets a request
	// that consumes no quota go, not counting SlotsFull: the latest of
	// BlockedUntil, NextSend and the end of an exhausted quota window.
	Wait float64 `json:"wait"`
	// BlockedUntil is the end of a hard minimum delay (Retry-After,
	// RateLimit-Reset, DelayScope): nothing is sent before it. Zero when
	// it is not after At.
	BlockedUntil time.Time `json:"blocked_until,omitzero"`
	// NextSend is the earliest send the delay allows: the last send plus
	// the current delay (with the jitter drawn for that gap), or the end of
	// a backoff step's pause counted from its trigger, whichever is later.
	// Zero when it is not after At.
	NextSend time.Time `json:"next_send,omitzero"`
	// QuotaUsed is the quota consumed in the current quota window.
	QuotaUsed float64 `json:"quota_used,omitempty"`
	// QuotaWindowStart and QuotaWindowEnd bound the current quota window
	// (it starts with the first send after the previous one ended); zero
	// when no window is open.
	QuotaWindowStart time.Time `json:"quota_window_start,omitzero"`
	QuotaWindowEnd   time.Time `json:"quota_window_end,omitzero"`
	// LastUsed is when the scope last sent, completed or got a backoff
	// trigger (for a custom manager without Viewer: when the throttler
	// last consulted it). Zero for a scope not in memory.
	LastUsed time.Time `json:"last_used,omitzero"`
}

// Viewer is an optional ScopeManager method that reports the scope's
// run-time state for Throttler.View. The default ThrottlingScopeManager
// implements it. A custom manager that does not is described from its
// configuration (ScopeView.FromConfig).
type Viewer interface {
	// View returns the scope's run-time state as of now, after applying
	// what the passing of time implies, as CanSend would (advancing the
	// state to now is allowed). It fills the run-time fields (Delay, Pace,
	// BackoffLevel, Concurrency, InFlight, SlotsFull, Wait, BlockedUntil,
	// NextSend, QuotaUsed, QuotaWindowStart, QuotaWindowEnd, LastUsed);
	// the throttler sets the identity, configuration and robots.txt
	// fields, whatever View put there.
	View(now time.Time) ScopeView
}

// View implements Viewer.
func (m *ThrottlingScopeManager) View(now time.Time) ScopeView {
	m.tick(now)
	p, g := m.policy, &m.gate
	v := ScopeView{
		Delay:        secondsOf(p.Delay()),
		Pace:         secondsOf(p.pace),
		BackoffLevel: p.level,
		Concurrency:  p.conc,
		InFlight:     g.State.Active,
		SlotsFull:    p.conc > 0 && g.State.Active >= p.conc,
		Wait:         secondsOf(g.CanSendWithoutSlot(now, 0)),
		QuotaUsed:    g.QuotaUsedAt(now),
		LastUsed:     m.lastUsed,
	}
	if p.blockedUntil.After(now) {
		v.BlockedUntil = p.blockedUntil
	}
	next := g.NextByDelay()
	if p.notBefore.After(next) {
		next = p.notBefore
	}
	if next.After(now) {
		v.NextSend = next
	}
	if g.quotaOpen(now) {
		v.QuotaWindowStart, v.QuotaWindowEnd = g.State.WindowStart, g.State.WindowStart.Add(g.Params.Window)
	}
	return v
}

// View returns the state of scope as of the throttler clock's now, whether
// or not the scope is held in memory. A scope in memory is advanced to now
// (the time-based recovery its next CanSend would apply anyway) but not
// marked as used, so viewing it does not keep it from being evicted. A
// scope not in memory is described from its configuration and robots.txt
// Crawl-delay, and is not created. Safe to call while the crawl runs.
func (t *Throttler) View(scope string) ScopeView {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.viewLocked(scope, now)
}

// Views returns the view of every scope held in memory, sorted by name, as
// of the throttler clock's now. Scopes not in memory (never used, or
// evicted) are left out; View describes any scope by name, and
// Config().ConfiguredScopes lists the THROTTLING_SCOPES entries.
func (t *Throttler) Views() []ScopeView {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	names := slices.Sorted(maps.Keys(t.scopes))
	out := make([]ScopeView, 0, len(names))
	for _, name := range names {
		out = append(out, t.viewLocked(name, now))
	}
	return out
}

// viewLocked builds the view of name at now. Callers hold t.mu.
func (t *Throttler) viewLocked(name string, now time.Time) ScopeView {
	cfg := t.cfg.Scope(name)
	robots, hasRobots := t.robots[name]
	var v ScopeView
	e, held := t.scopes[name]
	switch {
	case !held:
		v = t.freshView(cfg, robots, hasRobots, now)
	default:
		if vw, ok := e.mgr.(Viewer); ok {
			v = vw.View(now)
			break
		}
		// A custom manager that cannot describe itself: its configured
		// values, and what CanSend says about waiting.
		v = t.freshView(cfg, robots, hasRobots, now)
		v.LastUsed = e.touched
		w := e.mgr.CanSend(now, 0)
		if w == UntilSlotFree {
			v.SlotsFull = true
			w = 0
			if c, ok := e.mgr.(SlotFreeChecker); ok {
				w = c.CanSendWithoutSlot(now, 0)
			}
		}
		v.Wait = secondsOf(w)
	}
	v.Scope, v.Kind, v.At, v.InMemory = name, kindName(cfg.Kind), now, held
	v.Manager, v.Configured = cfg.Manager, t.cfg.Configured(name)
	v.ConfiguredDelay, v.ConfiguredConcurrency = secondsOf(cfg.Delay), cfg.Concurrency
	v.Quota, v.QuotaWindow = cfg.Quota, 0
	if cfg.Quota > 0 {
		v.QuotaWindow = secondsOf(cfg.Window)
	}
	v.Rampup = cfg.Rampup.Enabled
	v.RobotsDelay, v.HasRobots = 0, hasRobots
	if hasRobots {
		v.RobotsDelay = secondsOf(robots)
	}
	return v
}

// freshView is the state a scope of cfg starts in, with its robots.txt
// Crawl-delay applied: the default scope manager's, built and discarded
// here (never inserted), so that it matches what creating the scope gives.
func (t *Throttler) freshView(cfg ScopeConfig, robots time.Duration, hasRobots bool, now time.Time) ScopeView {
	m := NewThrottlingScopeManager(ScopeEnv{Config: cfg, Rand: t.rnd})
	if hasRobots {
		applyRobots(m, cfg, robots)
	}
	v := m.View(now)
	v.FromConfig = true
	return v
}

// kindName is the ScopeView.Kind of k.
func kindName(k ScopeKind) string {
	switch k {
	case KindDomain:
		return "domain"
	case KindIP:
		return "ip"
	default:
		return "custom"
	}
}
