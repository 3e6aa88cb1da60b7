package throttling

import (
	"math/rand/v2"
	"time"

	"github.com/rs/zerolog"
)

// ThrottlingScopeManager is the default scope manager
// (THROTTLING_SCOPE_MANAGER "ThrottlingScopeManager"): it enforces a
// scope's concurrency, delay with jitter and quota, backs off on triggers
// (backoff.go), recovers one step per quiet window, and with rampup probes
// for the fastest rate the scope tolerates (rampup.go).
//
// The throttler serialises calls, so it does no locking of its own.
type ThrottlingScopeManager struct {
	cfg ScopeConfig
	rnd *rand.Rand
	dbg zerolog.Logger

	baseDelay time.Duration // configured delay (or robots.txt Crawl-delay)
	baseConc  int           // configured concurrency (or 1 from robots.txt); rampup ceiling
	rampDelay time.Duration // rampup: current delay
	rampFloor time.Duration // rampup: lowest delay allowed
	conc      int           // current concurrency limit (0 = unlimited)

	active   int
	lastSent time.Time
	jitterF  float64 // jitter factor drawn for the gap after lastSent
	lastUsed time.Time

	backoffState
	rampState
	quotaState
}

// NewThrottlingScopeManager returns the default manager of one scope.
func NewThrottlingScopeManager(env ScopeEnv) *ThrottlingScopeManager {
	rnd := env.Rand
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	m := &ThrottlingScopeManager{cfg: env.Config, rnd: rnd, dbg: env.Debug, jitterF: 1}
	m.baseDelay = m.cfg.Delay
	m.baseConc = m.cfg.Concurrency
	m.conc = m.baseConc
	if m.cfg.Rampup.Enabled {
		m.rampDelay = m.baseDelay
		m.rampFloor = m.cfg.Rampup.MinDelay
		m.conc = max(m.cfg.MinConcurrency, 1)
		if m.baseConc > 0 {
			m.conc = min(m.conc, m.baseConc)
		}
	}
	return m
}

// Config returns the scope's configuration.
func (m *ThrottlingScopeManager) Config() ScopeConfig { return m.cfg }

// Delay returns the scope's current delay (before jitter).
func (m *ThrottlingScopeManager) Delay() time.Duration {
	if m.cfg.Rampup.Enabled {
		return max(m.rampDelay, m.pace)
	}
	return max(m.levelDelay(m.baseDelay, m.level), m.pace)
}

// Pace returns the Retry-After pacing floor of the delay (0 = none).
func (m *ThrottlingScopeManager) Pace() time.Duration { return m.pace }

// Concurrency returns the scope's current concurrency limit (0 = unlimited).
func (m *ThrottlingScopeManager) Concurrency() int { return m.conc }

// Level returns the number of backoff steps not yet recovered.
func (m *ThrottlingScopeManager) Level() int { return m.level }

// Active returns the number of requests in flight.
func (m *ThrottlingScopeManager) Active() int { return m.active }

// tick applies what the passing of time implies: recovery after quiet
// windows, rampup window evaluation, quota window reset.
func (m *ThrottlingScopeManager) tick(now time.Time) {
	if m.cfg.Rampup.Enabled {
		m.rampTick(now)
	} else {
		m.recoverTick(now)
	}
	m.paceTick(now)
	m.quotaTick(now)
}

// CanSend implements ScopeManager.
func (m *ThrottlingScopeManager) CanSend(now time.Time, amount float64) time.Duration {
	m.tick(now)
	if m.conc > 0 && m.active >= m.conc {
		return UntilSlotFree
	}
	return m.wait(now, amount)
}

// CanSendWithoutSlot implements SlotFreeChecker.
func (m *ThrottlingScopeManager) CanSendWithoutSlot(now time.Time, amount float64) time.Duration {
	m.tick(now)
	return m.wait(now, amount)
}

func (m *ThrottlingScopeManager) wait(now time.Time, amount float64) time.Duration {
	var w time.Duration
	if now.Before(m.blockedUntil) {
		w = m.blockedUntil.Sub(now)
	}
	if now.Before(m.notBefore) {
		w = max(w, m.notBefore.Sub(now))
	}
	if next := m.nextByDelay(); now.Before(next) {
		w = max(w, next.Sub(now))
	}
	return max(w, m.quotaWait(now, amount))
}

// nextByDelay is when the delay after the last send has elapsed.
func (m *ThrottlingScopeManager) nextByDelay() time.Time {
	if m.lastSent.IsZero() {
		return time.Time{}
	}
	return m.lastSent.Add(time.Duration(float64(m.Delay()) * m.jitterF))
}

// RecordSent implements ScopeManager.
func (m *ThrottlingScopeManager) RecordSent(now time.Time, amount float64) {
	m.tick(now)
	m.active++
	m.lastSent, m.lastUsed = now, now
	j := m.cfg.Jitter
	if m.level > 0 || m.pace > 0 {
		j = m.cfg.Backoff.Jitter // BACKOFF_JITTER overrides RANDOMIZE_DOWNLOAD_DELAY during backoff
	}
	m.jitterF = jitterFactor(j, m.rnd)
	m.countSend(now)
	m.quotaSent(now, amount)
	m.rampSent(now)
}

// RecordDone implements ScopeManager.
func (m *ThrottlingScopeManager) RecordDone(now time.Time) {
	if m.active > 0 {
		m.active--
	}
	m.lastUsed = now
}

// SetBaseDelay implements ScopeManager: the configured delay becomes d
// (robots.txt Crawl-delay). With rampup, d is also the floor rampup does
// not go below.
func (m *ThrottlingScopeManager) SetBaseDelay(d time.Duration) {
	m.baseDelay = d
	if m.cfg.Rampup.Enabled {
		m.rampFloor = max(m.cfg.Rampup.MinDelay, d)
		m.rampDelay = max(m.rampDelay, d)
	}
}

// SetConcurrency implements ScopeManager.
func (m *ThrottlingScopeManager) SetConcurrency(n int) {
	m.baseConc = n
	if m.cfg.Rampup.Enabled {
		if n > 0 {
			m.conc = min(m.conc, n)
		}
		return
	}
	m.conc = n
}

// IsIdle implements ScopeManager: nothing in flight, no backoff level, no
// pending delay or hard minimum, no quota used in the current window, no
// state learnt by rampup... and unused for maxIdle when maxIdle > 0.
func (m *ThrottlingScopeManager) IsIdle(now time.Time, maxIdle time.Duration) bool {
	m.tick(now)
	if m.active > 0 || m.level > 0 || m.pace > 0 || now.Before(m.blockedUntil) || now.Before(m.notBefore) ||
		now.Before(m.nextByDelay()) || m.quotaBusy(now) {
		return false
	}
	return maxIdle <= 0 || now.Sub(m.lastUsed) >= maxIdle
}

// Snapshot implements Snapshotter.
func (m *ThrottlingScopeManager) Snapshot(now time.Time) ScopeSnapshot {
	m.tick(now)
	s := ScopeSnapshot{Delay: secondsOf(m.Delay()), BackoffLevel: m.level, LastTrigger: m.lastTrigger,
		LastStep: m.lastStep, QuotaUsed: m.used, WindowStart: m.windowStart, Concurrency: m.conc,
		Pace: secondsOf(m.pace), QuietMark: m.quietMark, PaceMark: m.paceMark}
	s.BlockedUntil = m.blockedUntil
	if m.notBefore.After(s.BlockedUntil) {
		s.BlockedUntil = m.notBefore
	}
	if !s.BlockedUntil.After(now) {
		s.BlockedUntil = time.Time{}
	}
	return s
}

// Restore implements Snapshotter.
func (m *ThrottlingScopeManager) Restore(now time.Time, s ScopeSnapshot) {
	m.level = max(0, s.BackoffLevel)
	m.blockedUntil = s.BlockedUntil
	m.lastTrigger, m.lastStep = s.LastTrigger, s.LastStep
	// The saved level and pace already include the recovery up to the
	// snapshot: count quiet windows from the saved marks, not from the last
	// trigger again (snapshots without marks fall back to it).
	m.quietMark = orTime(s.QuietMark, s.LastTrigger)
	m.pace, m.paceMark = durationOf(s.Pace), orTime(s.PaceMark, s.LastTrigger)
	if !m.cfg.Backoff.RetryAfterPacing {
		m.pace = 0
	}
	m.used, m.windowStart = s.QuotaUsed, s.WindowStart
	if m.cfg.Rampup.Enabled {
		m.rampDelay = max(durationOf(s.Delay), m.rampFloor)
		if s.Concurrency > 0 {
			m.conc = max(s.Concurrency, m.cfg.MinConcurrency)
			if m.baseConc > 0 {
				m.conc = min(m.conc, m.baseConc)
			}
		}
	}
	m.lastUsed = now
	m.tick(now)
}

func orTime(t, fallback time.Time) time.Time {
	if t.IsZero() {
		return fallback
	}
	return t
}

// jitterFactor returns 1+uniform(j[0], j[1]), never negative.
func jitterFactor(j [2]float64, rnd *rand.Rand) float64 {
	if j[0] == 0 && j[1] == 0 {
		return 1
	}
	return max(0, 1+j[0]+rnd.Float64()*(j[1]-j[0]))
}

func (m *ThrottlingScopeManager) debug(reason string) *zerolog.Event {
	return m.dbg.Info().Str("scope", m.cfg.Name).Str("reason", reason).
		Stringer("delay", m.Delay().Round(time.Millisecond)).Int("level", m.level).Int("concurrency", m.conc)
}
