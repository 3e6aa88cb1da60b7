package throttling

import (
	"slices"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/settings"
)

// ScopeSnapshot is the run-time state of one throttling scope in a form
// that survives a restart (JSON-friendly: plain numbers, strings and
// RFC 3339 times). A paused job stores the throttler's snapshot (see
// Throttler.Snapshot) and a resumed job hands it back (Throttler.Restore),
// so a scope that was backing off keeps backing off instead of starting
// over at full speed.
//
// Durations are in seconds, as in the settings. Zero values mean "nothing
// to restore" for that field.
type ScopeSnapshot struct {
	// Scope is the scope's name.
	Scope string `json:"scope"`
	// Delay is the scope's current delay in seconds (configured delay
	// after backoff, recovery and rampup).
	Delay float64 `json:"delay"`
	// BackoffLevel is how many backoff steps the scope is above its
	// configured (or rampup) delay; 0 when not backing off.
	BackoffLevel int `json:"backoff_level,omitempty"`
	// BlockedUntil is the end of a hard minimum delay (Retry-After,
	// RateLimit-Reset, DelayScope): nothing is sent before it.
	BlockedUntil time.Time `json:"blocked_until,omitzero"`
	// LastTrigger is when the scope last got a backoff trigger; recovery
	// counts quiet windows from it.
	LastTrigger time.Time `json:"last_trigger,omitzero"`
	// LastStep is when the scope last took a backoff step; responses to
	// requests sent before it count toward that step.
	LastStep time.Time `json:"last_step,omitzero"`
	// QuotaUsed is the quota consumed in the current window.
	QuotaUsed float64 `json:"quota_used,omitempty"`
	// WindowStart is when the current quota window started.
	WindowStart time.Time `json:"window_start,omitzero"`
	// Concurrency is the scope's current concurrency limit (0 = unlimited).
	Concurrency int `json:"concurrency"`
	// Pace is the Retry-After pacing floor of the delay, in seconds
	// (BACKOFF_RETRY_AFTER_PACING); 0 = none.
	Pace float64 `json:"pace,omitempty"`
	// QuietMark and PaceMark are where the current quiet windows of the
	// backoff level and of the pace started; recovery resumes from them.
	QuietMark time.Time `json:"quiet_mark,omitzero"`
	PaceMark  time.Time `json:"pace_mark,omitzero"`
	// RobotsDelay is the robots.txt Crawl-delay applied to the scope, in
	// seconds, already capped at THROTTLING_ROBOTSTXT_MAX_DELAY; 0 = none.
	RobotsDelay float64 `json:"robots_delay,omitempty"`
	// HasRobots is true when RobotsDelay came from a robots.txt (even 0).
	HasRobots bool `json:"has_robots,omitempty"`
	// Policy is the whole state of the default scope manager's policy,
	// which Restore prefers to the flat fields above (those stay for
	// readers of the snapshot and for jobs saved before it existed).
	Policy *PolicyState `json:"policy,omitempty"`
	// Gate is the scope gate's state: its counters, which the policy's
	// marks and RateLimit send budget are counted against, and its last
	// send, so the delay holds across a pause. Nothing is in flight in a
	// restored gate (Active is saved as 0).
	Gate *GateState `json:"gate,omitempty"`
}

// Snapshotter is implemented by scope managers whose state can be saved
// and restored. The default ThrottlingScopeManager implements it; a custom
// ScopeManager that does not is simply recreated from its configuration
// when a job resumes.
type Snapshotter interface {
	// Snapshot returns the scope's state at now. Scope and the robots
	// fields are filled in by the throttler.
	Snapshot(now time.Time) ScopeSnapshot
	// Restore loads a state saved by Snapshot.
	Restore(now time.Time, s ScopeSnapshot)
}

func secondsOf(d time.Duration) float64 { return d.Seconds() }

func durationOf(s float64) time.Duration { return settings.Duration(s) }

// Snapshot returns the state of every scope held in memory whose manager
// implements Snapshotter, sorted by scope name, leaving out scopes in their
// configured state (no backoff, hard delay, quota use, rampup progress,
// Crawl-delay, RateLimit send budget, nor a delay after the last send
// still running), which a resumed crawl recreates identically anyway. It is
// what a JOBDIR stores, not a listing of the scopes: use Views (every scope
// in memory) or View (any scope by name) to see scopes whatever their
// state. It is safe to call while the crawl runs.
func (t *Throttler) Snapshot() []ScopeSnapshot {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ScopeSnapshot, 0, len(t.scopes))
	for name, e := range t.scopes {
		sn, ok := e.mgr.(Snapshotter)
		if !ok {
			continue
		}
		s := sn.Snapshot(now)
		s.Scope = name
		if d, ok := t.robots[name]; ok {
			s.RobotsDelay, s.HasRobots = secondsOf(d), true
		}
		if t.pristine(s, now) {
			continue // recreated identically from the configuration
		}
		out = append(out, s)
	}
	for name, d := range t.robots {
		if _, held := t.scopes[name]; !held {
			out = append(out, ScopeSnapshot{Scope: name, RobotsDelay: secondsOf(d), HasRobots: true})
		}
	}
	slices.SortFunc(out, func(a, b ScopeSnapshot) int { return strings.Compare(a.Scope, b.Scope) })
	return out
}

// Restore loads scope states saved by Snapshot, typically before the crawl
// starts. Scopes are recreated from the current configuration first, so a
// changed THROTTLING_SCOPES still applies; the saved backoff, quota and
// robots.txt state is then laid over it.
func (t *Throttler) Restore(snaps []ScopeSnapshot) {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range snaps {
		if s.Scope == "" {
			continue
		}
		if s.HasRobots {
			t.robots[s.Scope] = durationOf(s.RobotsDelay)
		}
		e := t.scope(s.Scope, now)
		if sn, ok := e.mgr.(Snapshotter); ok {
			sn.Restore(now, s)
		}
	}
}

// pristine reports whether s is what a scope in its configured state
// would report at now. A scope whose delay after its last send still runs,
// or whose policy holds a RateLimit send budget until a reset to come, is
// not: a resumed crawl would otherwise send at once, or past the budget.
func (t *Throttler) pristine(s ScopeSnapshot, now time.Time) bool {
	if s.BackoffLevel != 0 || s.Pace != 0 || !s.BlockedUntil.IsZero() || s.QuotaUsed != 0 || s.HasRobots {
		return false
	}
	if s.Policy != nil && s.Policy.RemainingUntil.After(now) {
		return false
	}
	if g := s.Gate; g != nil && !g.LastOnWire().IsZero() &&
		g.LastOnWire().Add(time.Duration(float64(durationOf(s.Delay))*g.JitterF)).After(now) {
		return false
	}
	cfg := t.cfg.Scope(s.Scope)
	conc := cfg.Concurrency
	if cfg.Rampup.Enabled {
		conc = max(cfg.MinConcurrency, 1)
		if cfg.Concurrency > 0 {
			conc = min(conc, cfg.Concurrency)
		}
	}
	return durationOf(s.Delay) == cfg.Delay && s.Concurrency == conc
}
