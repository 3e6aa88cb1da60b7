package throttling

import (
	"math/rand/v2"
	"time"
)

// ScopeConfig is the configuration of one scope, from THROTTLING_SCOPES
// merged over the defaults for its kind.
type ScopeConfig struct {
	// Concurrency is the maximum number of requests in flight (0 = unlimited).
	Concurrency int
	// MinConcurrency is the floor backoff and rampup never go below.
	MinConcurrency int
	// Delay is the minimum time between two sends.
	Delay time.Duration
	// Jitter randomizes Delay: each delay is Delay*(1+uniform(Jitter[0], Jitter[1])).
	Jitter [2]float64
}

// jittered returns d randomized by j.
func jittered(d time.Duration, j [2]float64, rnd *rand.Rand) time.Duration {
	if d <= 0 || (j[0] == 0 && j[1] == 0) {
		return d
	}
	f := 1 + j[0] + rnd.Float64()*(j[1]-j[0])
	if f < 0 {
		f = 0
	}
	return time.Duration(float64(d) * f)
}

// BasicScopeManager enforces a scope's concurrency and delay with jitter. It
// is the base state of every scope; the default ThrottlingScopeManager adds
// backoff, rampup and quotas on top.
type BasicScopeManager struct {
	cfg      ScopeConfig
	rnd      *rand.Rand
	active   int
	lastSent time.Time
	gap      time.Duration // jittered delay that applies after lastSent
	lastUsed time.Time
}

// NewBasicScopeManager returns a scope manager for cfg using rnd for jitter.
func NewBasicScopeManager(cfg ScopeConfig, rnd *rand.Rand) *BasicScopeManager {
	return &BasicScopeManager{cfg: cfg, rnd: rnd}
}

// CanSend implements ScopeManager.
func (m *BasicScopeManager) CanSend(now time.Time, amount float64) time.Duration {
	if m.cfg.Concurrency > 0 && m.active >= m.cfg.Concurrency {
		return UntilSlotFree
	}
	if !m.lastSent.IsZero() {
		if next := m.lastSent.Add(m.gap); now.Before(next) {
			return next.Sub(now)
		}
	}
	return 0
}

// RecordSent implements ScopeManager.
func (m *BasicScopeManager) RecordSent(now time.Time, amount float64) {
	m.active++
	m.lastSent = now
	m.lastUsed = now
	m.gap = jittered(m.cfg.Delay, m.cfg.Jitter, m.rnd)
}

// RecordDone implements ScopeManager.
func (m *BasicScopeManager) RecordDone(now time.Time) {
	if m.active > 0 {
		m.active--
	}
	m.lastUsed = now
}

// RecordBackoff implements ScopeManager; the basic manager does not back off.
func (m *BasicScopeManager) RecordBackoff(now time.Time, sig BackoffSignal) {}

// ReconcileQuota implements ScopeManager; the basic manager has no quota.
func (m *BasicScopeManager) ReconcileQuota(now time.Time, consumed, remaining *float64) {}

// SetBaseDelay implements ScopeManager.
func (m *BasicScopeManager) SetBaseDelay(d time.Duration) { m.cfg.Delay = d }

// SetConcurrency implements ScopeManager.
func (m *BasicScopeManager) SetConcurrency(n int) { m.cfg.Concurrency = n }

// IsIdle implements ScopeManager.
func (m *BasicScopeManager) IsIdle(now time.Time, maxIdle time.Duration) bool {
	if m.active > 0 {
		return false
	}
	return maxIdle <= 0 || now.Sub(m.lastUsed) >= maxIdle
}

// Active returns the number of requests in flight.
func (m *BasicScopeManager) Active() int { return m.active }
