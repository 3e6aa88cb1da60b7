package throttling

import (
	"math/rand/v2"
	"time"
)

// ThrottlingScopeManager is the default scope manager
// (THROTTLING_SCOPE_MANAGER "ThrottlingScopeManager"): it enforces a
// scope's concurrency, delay with jitter and quota, backs off on triggers
// (backoff.go), recovers one step per quiet window, and with rampup probes
// for the fastest rate the scope tolerates (rampup.go).
//
// It is a Policy (how fast the scope may go; policy.go) and a Gate (what
// is in flight and when the last request left; gate.go). Every call first
// lets the policy apply the passing of time and re-derives the gate's
// parameters, then asks or updates the gate. The throttler serialises
// calls, so it does no locking of its own.
type ThrottlingScopeManager struct {
	policy   *Policy
	gate     Gate
	rnd      *rand.Rand
	lastUsed time.Time
}

// NewThrottlingScopeManager returns the default manager of one scope.
func NewThrottlingScopeManager(env ScopeEnv) *ThrottlingScopeManager {
	if env.Rand == nil {
		env.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	m := &ThrottlingScopeManager{policy: NewPolicy(env), rnd: env.Rand}
	m.gate.Params = m.policy.Params(time.Time{})
	return m
}

// Config returns the scope's configuration.
func (m *ThrottlingScopeManager) Config() ScopeConfig { return m.policy.cfg }

// Policy returns the scope's policy. Changing it directly bypasses the
// manager: use it to read its state.
func (m *ThrottlingScopeManager) Policy() *Policy { return m.policy }

// Gate returns a copy of the scope's gate (parameters and state) as of the
// manager's last call.
func (m *ThrottlingScopeManager) Gate() Gate { return m.gate }

// Delay returns the scope's current delay (before jitter).
func (m *ThrottlingScopeManager) Delay() time.Duration { return m.policy.Delay() }

// Pace returns the Retry-After pacing floor of the delay (0 = none).
func (m *ThrottlingScopeManager) Pace() time.Duration { return m.policy.pace }

// Concurrency returns the scope's current concurrency limit (0 = unlimited).
func (m *ThrottlingScopeManager) Concurrency() int { return m.policy.conc }

// Level returns the number of backoff steps not yet recovered.
func (m *ThrottlingScopeManager) Level() int { return m.policy.level }

// Active returns the number of requests in flight.
func (m *ThrottlingScopeManager) Active() int { return m.gate.State.Active }

// Used returns the quota consumed in the current window.
func (m *ThrottlingScopeManager) Used() float64 { return m.gate.State.QuotaUsed }

// tick applies what the passing of time implies (recovery after quiet
// windows, rampup window evaluation, pace recovery) and re-derives the
// gate's parameters.
func (m *ThrottlingScopeManager) tick(now time.Time) {
	m.policy.Tick(now, m.gate.State)
	m.gate.Params = m.policy.Params(now)
}

// CanSend implements ScopeManager.
func (m *ThrottlingScopeManager) CanSend(now time.Time, amount float64) time.Duration {
	m.tick(now)
	return m.gate.CanSend(now, amount)
}

// CanSendWithoutSlot implements SlotFreeChecker.
func (m *ThrottlingScopeManager) CanSendWithoutSlot(now time.Time, amount float64) time.Duration {
	m.tick(now)
	return m.gate.CanSendWithoutSlot(now, amount)
}

// RecordSent implements ScopeManager.
func (m *ThrottlingScopeManager) RecordSent(now time.Time, amount float64) {
	m.tick(now)
	var u float64
	if p := m.gate.Params; p.JitterLo != 0 || p.JitterHi != 0 {
		u = m.rnd.Float64()
	}
	m.gate.RecordSent(now, amount, u)
	m.lastUsed = now
}

// RecordDone implements ScopeManager. The throttler calls RecordOutcome
// instead, which also says how the request ended.
func (m *ThrottlingScopeManager) RecordDone(now time.Time) {
	m.RecordOutcome(now, Outcome{})
}

// RecordBackoff implements ScopeManager.
func (m *ThrottlingScopeManager) RecordBackoff(now time.Time, sig BackoffSignal) {
	m.feedback(now, Signal{Trigger: true, SentAt: sig.SentAt, Delay: sig.Delay, Uncapped: sig.Uncapped})
}

// RecordOutcome implements OutcomeRecorder: the completion, then its
// signal.
func (m *ThrottlingScopeManager) RecordOutcome(now time.Time, o Outcome) {
	m.tick(now)
	if o.Class == OutcomeNotSent {
		m.gate.GiveBack(o.SentAt, o.Amount)
	}
	m.gate.RecordDone(now, o.Class, o.Latency)
	m.lastUsed = now
	if !o.Signal.empty() {
		m.feedback(now, o.Signal)
	}
}

func (m *ThrottlingScopeManager) feedback(now time.Time, sig Signal) {
	m.policy.OnFeedback(now, sig, m.gate.State)
	m.gate.Params = m.policy.Params(now)
	m.lastUsed = now
}

// ReconcileQuota implements ScopeManager.
func (m *ThrottlingScopeManager) ReconcileQuota(now time.Time, consumed, remaining *float64) {
	m.tick(now)
	if m.gate.Params.Quota <= 0 {
		return
	}
	m.gate.Reconcile(now, consumed, remaining)
	m.policy.debug("quota").Float64("used", m.gate.State.QuotaUsed).Float64("quota", m.gate.Params.Quota).
		Msg("throttling: quota reconciled")
}

// SetBaseDelay implements ScopeManager: the configured delay becomes d
// (robots.txt Crawl-delay). With rampup, d is also the floor rampup does
// not go below.
func (m *ThrottlingScopeManager) SetBaseDelay(d time.Duration) {
	m.policy.SetBaseDelay(d)
	m.gate.Params = m.policy.Params(m.lastUsed)
}

// SetConcurrency implements ScopeManager.
func (m *ThrottlingScopeManager) SetConcurrency(n int) {
	m.policy.SetConcurrency(n)
	m.gate.Params = m.policy.Params(m.lastUsed)
}

// IsIdle implements ScopeManager: nothing in flight, no backoff level, no
// pending delay or hard minimum, no quota used in the current window, no
// state learnt by rampup... and unused for maxIdle when maxIdle > 0.
func (m *ThrottlingScopeManager) IsIdle(now time.Time, maxIdle time.Duration) bool {
	m.tick(now)
	g := &m.gate
	if g.State.Active > 0 || m.policy.backingOff() || now.Before(g.Params.BlockedUntil) ||
		now.Before(g.NextByDelay()) || g.quotaOpen(now) {
		return false
	}
	return maxIdle <= 0 || now.Sub(m.lastUsed) >= maxIdle
}

// Snapshot implements Snapshotter.
func (m *ThrottlingScopeManager) Snapshot(now time.Time) ScopeSnapshot {
	m.tick(now)
	p, g := m.policy, &m.gate
	ps := p.State()
	s := ScopeSnapshot{Delay: secondsOf(p.Delay()), BackoffLevel: p.level, LastTrigger: p.lastTrigger,
		LastStep: p.lastStep, QuotaUsed: g.QuotaUsedAt(now), Concurrency: p.conc,
		Pace: secondsOf(p.pace), QuietMark: p.quietMark, PaceMark: p.paceMark, Policy: &ps}
	if g.quotaOpen(now) {
		s.WindowStart = g.State.WindowStart
	}
	if g.Params.BlockedUntil.After(now) {
		s.BlockedUntil = g.Params.BlockedUntil
	}
	gs := g.State
	gs.Active = 0
	s.Gate = &gs
	return s
}

// Restore implements Snapshotter. A snapshot written before the policy
// was saved whole (no Policy field) is read from its flat fields.
//
// The policy's RateLimit send budget is counted against the gate's
// counters: a snapshot without the gate's state (written before
// ScopeSnapshot.Gate existed) drops it, so at most one reset's hold is
// lost, never a budget counted against counters that restarted at zero.
func (m *ThrottlingScopeManager) Restore(now time.Time, s ScopeSnapshot) {
	ps := legacyPolicyState(s)
	if s.Policy != nil {
		ps = *s.Policy
	}
	if s.Gate == nil {
		ps.SendLimit, ps.RemainingUntil = 0, time.Time{}
	}
	if err := m.policy.SetState(ps); err != nil {
		m.policy.dbg.Warn().Err(err).Str("scope", m.policy.cfg.Name).Msg("throttling: saved scope state ignored")
	}
	if s.Gate != nil {
		m.gate.State = *s.Gate
		m.gate.State.Active = 0
		m.gate.State.AreaAt = time.Time{}
	}
	if m.policy.cfg.Quota > 0 {
		m.gate.State.QuotaUsed, m.gate.State.WindowStart = s.QuotaUsed, s.WindowStart
	}
	m.lastUsed = now
	m.tick(now)
}

// legacyPolicyState reads the flat fields of a snapshot written before
// ScopeSnapshot.Policy existed.
func legacyPolicyState(s ScopeSnapshot) PolicyState {
	// The saved level and pace already include the recovery up to the
	// snapshot: count quiet windows from the saved marks, not from the last
	// trigger again (snapshots without marks fall back to it).
	return PolicyState{Version: 1, Level: s.BackoffLevel, BlockedUntil: s.BlockedUntil,
		LastTrigger: s.LastTrigger, LastStep: s.LastStep, QuietMark: orTime(s.QuietMark, s.LastTrigger),
		Pace: durationOf(s.Pace), PaceMark: orTime(s.PaceMark, s.LastTrigger),
		RampDelay: durationOf(s.Delay), RampConcurrency: s.Concurrency}
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
