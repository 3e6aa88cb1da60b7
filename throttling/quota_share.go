package throttling

import (
	"math"
	"time"
)

// QuotaLeft is implemented by scope managers that enforce a quota: it
// returns the quota left in the current window at now, and false when the
// scope has no quota.
type QuotaLeft interface {
	QuotaLeft(now time.Time) (float64, bool)
}

// QuotaLeft implements the QuotaLeft interface. It does not change the
// scope's state: a window that is over counts as fully available.
func (m *ThrottlingScopeManager) QuotaLeft(now time.Time) (float64, bool) {
	q := m.policy.cfg.Quota
	if q <= 0 {
		return 0, false
	}
	return max(0, q-m.gate.QuotaUsedAt(now)), true
}

// QuotaShare returns amount as a fraction of the quota scope has left in
// its current window: 0 for a scope without a quota (or whose manager does
// not report one) and for a zero amount; more than 1 when amount exceeds
// what is left, +Inf when nothing is left. The throttling-aware scheduler
// uses it to break priority ties in favour of requests that need a larger
// share of their quota (the quota-share ordering of Scrapy's throttling
// design, PR #6931), so that they do not get stuck behind small ones.
func (t *Throttler) QuotaShare(scope string, amount float64) float64 {
	if amount <= 0 {
		return 0
	}
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	var left float64
	if e, ok := t.scopes[scope]; ok {
		q, ok := e.mgr.(QuotaLeft)
		if !ok {
			return 0
		}
		if left, ok = q.QuotaLeft(now); !ok {
			return 0
		}
	} else {
		if left = t.cfg.Scope(scope).Quota; left <= 0 {
			return 0
		}
	}
	if left <= 0 {
		return math.Inf(1)
	}
	return amount / left
}
