package throttling

import "time"

// quotaState is the quota part of a ThrottlingScopeManager.
//
// A scope with a quota lets its requests consume at most quota per window.
// A window starts with the first send after the previous one ended (a
// fixed window per scope, like a server's quota). A request whose amount
// would overflow the quota waits for the next window, unless nothing was
// used yet in the window (a single request larger than the quota still
// goes, alone). Responses can correct the estimate: by a delta
// (consumed) or with what the server says is left (remaining).
type quotaState struct {
	used        float64
	windowStart time.Time
}

func (m *ThrottlingScopeManager) quotaOn() bool { return m.cfg.Quota > 0 }

// quotaTick ends the current window when it is over.
func (m *ThrottlingScopeManager) quotaTick(now time.Time) {
	if !m.windowStart.IsZero() && !now.Before(m.windowStart.Add(m.cfg.Window)) {
		m.windowStart, m.used = time.Time{}, 0
	}
}

func (m *ThrottlingScopeManager) quotaWait(now time.Time, amount float64) time.Duration {
	if !m.quotaOn() || m.windowStart.IsZero() || m.used <= 0 || m.used+amount <= m.cfg.Quota {
		return 0
	}
	return m.windowStart.Add(m.cfg.Window).Sub(now)
}

func (m *ThrottlingScopeManager) quotaSent(now time.Time, amount float64) {
	if !m.quotaOn() {
		return
	}
	if m.windowStart.IsZero() {
		m.windowStart = now
	}
	m.used += amount
}

// quotaBusy reports whether the current window holds state worth keeping.
func (m *ThrottlingScopeManager) quotaBusy(now time.Time) bool {
	return m.quotaOn() && !m.windowStart.IsZero() && now.Before(m.windowStart.Add(m.cfg.Window))
}

// Used returns the quota consumed in the current window.
func (m *ThrottlingScopeManager) Used() float64 { return m.used }

// ReconcileQuota implements ScopeManager.
func (m *ThrottlingScopeManager) ReconcileQuota(now time.Time, consumed, remaining *float64) {
	m.tick(now)
	if !m.quotaOn() {
		return
	}
	if m.windowStart.IsZero() {
		m.windowStart = now
	}
	switch {
	case remaining != nil:
		m.used = max(0, m.cfg.Quota-*remaining)
	case consumed != nil:
		m.used = max(0, m.used+*consumed)
	}
	m.debug("quota").Float64("used", m.used).Float64("quota", m.cfg.Quota).Msg("throttling: quota reconciled")
}
