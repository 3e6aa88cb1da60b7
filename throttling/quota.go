package throttling

import "time"

// Quotas, the gate's part.
//
// A scope with a quota lets its requests consume at most quota per window.
// A window starts with the first send after the previous one ended (a
// fixed window per scope, like a server's quota). A request whose amount
// would overflow the quota waits for the next window, unless nothing was
// used yet in the window (a single request larger than the quota still
// goes, alone). Responses can correct the estimate: by a delta
// (consumed) or with what the server says is left (remaining).

// quotaOpen reports whether a quota window is open at now.
func (g *Gate) quotaOpen(now time.Time) bool {
	s := &g.State
	return g.Params.Quota > 0 && !s.WindowStart.IsZero() && now.Before(s.WindowStart.Add(g.Params.Window))
}

// QuotaUsedAt is the quota consumed in the window open at now (0 when the
// window is over).
func (g *Gate) QuotaUsedAt(now time.Time) float64 {
	if !g.quotaOpen(now) {
		return 0
	}
	return g.State.QuotaUsed
}

// quotaWait is how long a request of amount waits for the next quota
// window: a request goes when it fits, or alone in an empty window.
func (g *Gate) quotaWait(now time.Time, amount float64) time.Duration {
	used := g.QuotaUsedAt(now)
	if used <= 0 || used+amount <= g.Params.Quota {
		return 0
	}
	return g.State.WindowStart.Add(g.Params.Window).Sub(now)
}

// Reconcile corrects the quota used in the current window (opening one at
// now if none is): by a delta (consumed), or from what the server says is
// left (remaining, which wins). Nil pointers are absent values; without a
// quota it does nothing.
func (g *Gate) Reconcile(now time.Time, consumed, remaining *float64) {
	if g.Params.Quota <= 0 {
		return
	}
	g.openWindow(now)
	s := &g.State
	switch {
	case remaining != nil:
		s.QuotaUsed = max(0, g.Params.Quota-*remaining)
	case consumed != nil:
		s.QuotaUsed = max(0, s.QuotaUsed+*consumed)
	}
}

// openWindow starts a quota window at now unless one is open.
func (g *Gate) openWindow(now time.Time) {
	if !g.quotaOpen(now) {
		g.State.WindowStart, g.State.QuotaUsed = now, 0
	}
}
