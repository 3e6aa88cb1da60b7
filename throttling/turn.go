package throttling

import (
	"context"
	"time"
)

// Taking another request's turn.
//
// A host's first request needs the host's robots.txt first. The request
// is admitted (its turn of the host's delay is taken), then the robots.txt
// middleware fetches robots.txt for it. Were robots.txt to wait for the
// delay after that admission, every host would get its first request one
// delay after its seed was admitted, and the seed would hold a global slot
// all that time: with thousands of seeds and a few hundred slots, the last
// hosts would wait many delays for their first request. So robots.txt
// takes the seed's turn instead: it is admitted at once, in the seed's
// place, and the seed goes back through the scheduler to follow it one
// delay later (middleware.RobotsTxt reschedules it), as any next request
// of the host.

type turnKey struct{}

// WithTurnOf returns ctx under which Admit admits a request in the turn of
// the request admitted at sentAt that has not reached the server (the
// request robots.txt is fetched for): in each scope where that request is
// still the last send, the new request does not wait for the delay after
// it, and the request at sentAt gives up its turn (it can no longer give it
// back: it is sent later, through the gate again, or not at all). The
// scope's hard minimum (Retry-After), its quota and its send budget still
// apply; the quota amount of the request at sentAt is used by the new one.
// Scopes where another request was sent since, and scope managers without
// TurnTaker, admit the new request as usual. A zero sentAt changes nothing.
func WithTurnOf(ctx context.Context, sentAt time.Time) context.Context {
	if sentAt.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, turnKey{}, sentAt)
}

// turnOf returns the send time set by WithTurnOf (zero without one).
func turnOf(ctx context.Context) time.Time {
	t, _ := ctx.Value(turnKey{}).(time.Time)
	return t
}

// TurnOf returns the send time whose turn a request admitted under ctx
// takes (WithTurnOf), zero without one. A Shared store reads it in Admit:
// the request it admits takes that send's turn in the shared gates.
func TurnOf(ctx context.Context) time.Time { return turnOf(ctx) }

// TurnTaker is an optional ScopeManager method pair: admitting a request
// in the turn of an earlier one that has not reached the server (see
// WithTurnOf). The default ThrottlingScopeManager implements it.
type TurnTaker interface {
	// CanSendInTurnOf is CanSendWithoutSlot for a request that takes the
	// turn of the request sent at sentAt: when that request is the last
	// send, the delay counts from the send before it, and its quota amount
	// is the new request's.
	CanSendInTurnOf(now, sentAt time.Time, amount float64) time.Duration
	// RecordSentInTurnOf is RecordSent for such a request: it reports
	// false, recording nothing, when the request at sentAt is no longer
	// the last send (the caller records an ordinary send then).
	RecordSentInTurnOf(now, sentAt time.Time, amount float64) bool
}

// ownsTurn reports whether the request sent at sentAt is the scope's last
// send and can still give its turn back (it has not reached the wire).
func (g *Gate) ownsTurn(sentAt time.Time) bool {
	return !sentAt.IsZero() && g.State.HasPrev && g.State.LastSent.Equal(sentAt) && g.State.Wired.IsZero()
}

// CanSendInTurnOf is CanSendWithoutSlot for a request taking the turn of
// the request sent at sentAt (see WithTurnOf): when that one owns the
// scope's last send, the delay counts from the send before it and its
// quota amount is left to the new request.
func (g *Gate) CanSendInTurnOf(now, sentAt time.Time, amount float64) time.Duration {
	if !g.ownsTurn(sentAt) {
		return g.CanSendWithoutSlot(now, amount)
	}
	saved := g.State
	s := &g.State
	s.LastSent, s.JitterF = s.PrevSent, s.PrevJitterF
	if g.Params.Quota > 0 && !s.WindowStart.IsZero() && !sentAt.Before(s.WindowStart) {
		s.QuotaUsed = max(0, s.QuotaUsed-amount)
	}
	w := g.CanSendWithoutSlot(now, amount)
	g.State = saved
	return w
}

// RecordSentInTurnOf records a request sent at now in the turn of the one
// sent at sentAt, and reports true, when that one owns the scope's last
// send: the delay to the next send counts from now, with the jitter of a
// new draw (u), and neither request can give its turn back (the one at
// sentAt is sent later through the gate; one given back now would let the
// next request follow this one at once). The quota is unchanged: the new
// request uses the amount counted for the one at sentAt. Otherwise it
// records nothing and reports false.
func (g *Gate) RecordSentInTurnOf(now, sentAt time.Time, u float64) bool {
	if !g.ownsTurn(sentAt) {
		return false
	}
	s := &g.State
	g.advance(now)
	s.Active++
	s.Sends++
	s.TurnSends++
	s.LastSent, s.Wired = now, time.Time{}
	s.JitterF = max(0, 1+g.Params.JitterLo+u*(g.Params.JitterHi-g.Params.JitterLo))
	s.HasPrev, s.PrevSent, s.PrevJitterF = false, time.Time{}, 0
	g.rollBucket(now)
	s.BucketSends++
	return true
}

// CanSendInTurnOf implements TurnTaker.
func (m *ThrottlingScopeManager) CanSendInTurnOf(now, sentAt time.Time, amount float64) time.Duration {
	m.tick(now)
	return m.gate.CanSendInTurnOf(now, sentAt, amount)
}

// RecordSentInTurnOf implements TurnTaker.
func (m *ThrottlingScopeManager) RecordSentInTurnOf(now, sentAt time.Time, amount float64) bool {
	m.tick(now)
	if !m.gate.ownsTurn(sentAt) {
		return false
	}
	var u float64
	if p := m.gate.Params; p.JitterLo != 0 || p.JitterHi != 0 {
		u = m.rnd.Float64()
	}
	m.gate.RecordSentInTurnOf(now, sentAt, u)
	m.lastUsed = now
	return true
}
