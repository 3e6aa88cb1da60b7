package throttling

import "time"

// The default scope manager is two parts (the shared contract of the
// in-memory and the distributed throttler):
//
//   - the Gate (this file): admission-time state, small and mechanical. It
//     answers "may a request go now?" and records sends and completions.
//     It makes no decision of its own: every number it compares against is
//     a parameter written by the Policy. A distributed throttler keeps
//     exactly this state next to the scope's shared data and runs these
//     operations atomically there (for Redis, as a Lua script), so that
//     the rules hold across worker processes.
//   - the Policy (policy.go): every rule that decides how fast a scope
//     goes (backoff, recovery, Retry-After pacing, rampup, the rate
//     controller, Crawl-delay). It runs in Go only, reads the gate's
//     counters and writes the gate's parameters (Policy.Params).
//
// In memory, ThrottlingScopeManager holds one of each and re-derives the
// parameters on every call. Time is always passed in; the gate draws no
// random numbers (RecordSent takes a uniform number from its caller).

// GateParams are the admission parameters of a scope, written only by the
// Policy (Policy.Params).
type GateParams struct {
	// Delay is the minimum time between two sends, before jitter.
	Delay time.Duration `json:"delay"`
	// JitterLo and JitterHi are the jitter range in force: each gap after
	// a send is Delay*(1+uniform(JitterLo, JitterHi)). They come from
	// RANDOMIZE_DOWNLOAD_DELAY or the scope's jitter normally, and from
	// BACKOFF_JITTER while the scope backs off or is paced.
	JitterLo float64 `json:"jitter_lo,omitempty"`
	JitterHi float64 `json:"jitter_hi,omitempty"`
	// Concurrency is the most requests in flight; 0 = unlimited.
	Concurrency int `json:"concurrency"`
	// BlockedUntil is a hard minimum: nothing is sent before it
	// (Retry-After, RateLimit-Reset, DelayScope, the pause after a backoff
	// step, a RateLimit "remaining 0" pause).
	BlockedUntil time.Time `json:"blocked_until,omitzero"`
	// Quota is the amount the scope's requests may consume per Window; 0
	// means no quota.
	Quota float64 `json:"quota,omitempty"`
	// Window is the length of a quota window.
	Window time.Duration `json:"window,omitempty"`
	// SendLimit and SendLimitUntil are a send budget, the RateLimit
	// "remaining" quota of the server's current window: until
	// SendLimitUntil (the window's reset), nothing is sent once the gate's
	// Sends − Other (requests that reached the server, or may have) has
	// reached SendLimit. It waits for the reset, not for a free slot: a
	// request answered does not give back the quota it used. Zero
	// SendLimitUntil: no budget.
	SendLimit      int64     `json:"send_limit,omitempty"`
	SendLimitUntil time.Time `json:"send_limit_until,omitzero"`
	// ValidUntil is the earliest time at which the Policy's time-based
	// state would change these parameters (the next recovery step, rampup
	// or controller window, pace recovery). Zero means they hold until
	// the next feedback. A distributed gate whose ValidUntil has passed is
	// stale: the Policy must refresh it (Policy.Tick, then Params) before
	// it admits anything. In memory the parameters are re-derived on every
	// call, so ValidUntil is informational.
	ValidUntil time.Time `json:"valid_until,omitzero"`
	// ValidUntilOK is ValidUntil counted in answers rather than time: the
	// parameters are stale once the gate's OK counter reaches it, for a
	// rule that changes them with answers (no built-in rule does since the
	// rate controller has no slow start). Zero: no such change pending.
	// A distributed gate refreshes its parameters then, as for ValidUntil;
	// in memory it is informational too.
	ValidUntilOK int64 `json:"valid_until_ok,omitempty"`
}

// OutcomeClass classifies a completed request for the gate's counters.
type OutcomeClass uint8

const (
	// OutcomeOther is a completion that says nothing about the server's
	// limit: a download error that is not a backoff trigger, a request
	// that was not downloaded, a throttling_dont_track request.
	OutcomeOther OutcomeClass = iota
	// OutcomeOK is a response the server accepted: any response that is
	// not a backoff trigger for the scope (a 404 is accepted too).
	OutcomeOK
	// OutcomeRefused is a backoff trigger for the scope (a status of its
	// backoff http_codes, an error of its backoff exceptions).
	OutcomeRefused
	// OutcomeNotSent is a request admitted but never sent to the server:
	// a middleware answered it (an HTTP cache hit) or dropped it (a URL
	// robots.txt disallows), or it was refused before anything was sent.
	// The gate counts it as other and gives its turn back (GiveBack).
	OutcomeNotSent
)

// String returns "other", "ok" or "refused".
func (c OutcomeClass) String() string {
	switch c {
	case OutcomeOK:
		return "ok"
	case OutcomeRefused:
		return "refused"
	case OutcomeNotSent:
		return "not sent"
	default:
		return "other"
	}
}

// GateState is the run-time state of a gate, written only by the gate's
// operations. The Policy reads it (Tick, OnFeedback) to measure what the
// scope did: every counter only ever grows, so the Policy keeps its own
// marks and takes differences.
type GateState struct {
	// Active is the number of requests in flight.
	Active int `json:"active"`
	// LastSent is when the last request was sent; zero before the first.
	LastSent time.Time `json:"last_sent,omitzero"`
	// JitterF is the jitter factor drawn for the gap after LastSent.
	JitterF float64 `json:"jitter_f,omitempty"`
	// PrevSent and PrevJitterF are the send before the last one, as it
	// reached the wire (its LastOnWire), and its JitterF, kept while the
	// last send can still be given back (HasPrev; see GiveBack) or its
	// gap read by the rate controller.
	PrevSent    time.Time `json:"prev_sent,omitzero"`
	PrevJitterF float64   `json:"prev_jitter_f,omitempty"`
	HasPrev     bool      `json:"has_prev,omitempty"`
	// Wired is when the last send was written to its connection, as
	// reported (RecordWired: later than LastSent after a new connection's
	// dial, LastSent itself when reported no later); zero before the
	// report. The delay to the next send counts from it (LastOnWire), and
	// a wired send's turn is never given back. LastSent keeps the
	// admission time, which names the request.
	Wired time.Time `json:"wired,omitzero"`
	// QuotaUsed is the quota consumed in the window started at
	// WindowStart (zero: no window open).
	QuotaUsed   float64   `json:"quota_used,omitempty"`
	WindowStart time.Time `json:"window_start,omitzero"`

	// Sends counts every request sent; TurnSends those sent in another
	// request's turn (RecordSentInTurnOf: robots.txt), which the rate
	// controller leaves out of a first refusal's burst.
	Sends     int64 `json:"sends,omitempty"`
	TurnSends int64 `json:"turn_sends,omitempty"`
	// OK, Refused and Other count completions by OutcomeClass.
	OK      int64 `json:"ok,omitempty"`
	Refused int64 `json:"refused,omitempty"`
	Other   int64 `json:"other,omitempty"`
	// LatencySum and LatencyN add up the latencies (send to completion) of
	// OK completions.
	LatencySum time.Duration `json:"latency_sum,omitempty"`
	LatencyN   int64         `json:"latency_n,omitempty"`
	// InFlightSeconds is the integral of Active over time (request-seconds)
	// and FullSeconds the time spent with every slot taken (Concurrency > 0
	// and Active >= Concurrency), both up to AreaAt: the Policy reads the
	// average concurrency and how often slots were the limit from them.
	InFlightSeconds float64   `json:"inflight_s,omitempty"`
	FullSeconds     float64   `json:"full_s,omitempty"`
	AreaAt          time.Time `json:"area_at,omitzero"`
	// BucketStart starts the current one-second bucket of sends;
	// BucketSends counts its sends and PrevBucketSends those of the bucket
	// before (the recent send rate).
	BucketStart     time.Time `json:"bucket_start,omitzero"`
	BucketSends     int       `json:"bucket_sends,omitempty"`
	PrevBucketSends int       `json:"prev_bucket_sends,omitempty"`
}

// Gate is the admission-time part of a scope: parameters written by the
// Policy, state written by the operations below. Its methods are
// deterministic functions of their arguments and the gate's fields.
type Gate struct {
	Params GateParams `json:"params"`
	State  GateState  `json:"state"`
}

// CanSend reports how long a request consuming amount of the quota must
// wait at now: 0, a wait, or UntilSlotFree when every concurrency slot is
// taken. The wait is the latest of BlockedUntil, LastOnWire + Delay*JitterF,
// the end of a quota window the amount does not fit in, and the end of a
// send budget used up (SendLimitUntil).
func (g *Gate) CanSend(now time.Time, amount float64) time.Duration {
	if g.Params.Concurrency > 0 && g.State.Active >= g.Params.Concurrency {
		return UntilSlotFree
	}
	return g.CanSendWithoutSlot(now, amount)
}

// CanSendWithoutSlot is CanSend for a request that needs no concurrency
// slot (robots.txt): its delay, hard minimum and quota still apply.
func (g *Gate) CanSendWithoutSlot(now time.Time, amount float64) time.Duration {
	var w time.Duration
	if now.Before(g.Params.BlockedUntil) {
		w = g.Params.BlockedUntil.Sub(now)
	}
	if next := g.NextByDelay(); now.Before(next) {
		w = max(w, next.Sub(now))
	}
	if now.Before(g.Params.SendLimitUntil) && g.State.Reached() >= g.Params.SendLimit {
		w = max(w, g.Params.SendLimitUntil.Sub(now))
	}
	return max(w, g.quotaWait(now, amount))
}

// Reached counts the requests that reached the server or may have: every
// send but those that ended without a download (OutcomeOther: not sent
// after all, or a failure that says nothing of the server). The send
// budget (GateParams.SendLimit) counts with it.
func (s GateState) Reached() int64 { return s.Sends - s.Other }

// NextByDelay is when the delay after the last send has elapsed (zero
// before the first send): counted from when it reached the wire, if that
// was later than its admission (LastOnWire).
func (g *Gate) NextByDelay() time.Time {
	last := g.State.LastOnWire()
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(time.Duration(float64(g.Params.Delay) * g.State.JitterF))
}

// LastOnWire is when the last send reached the server as far as the gate
// knows: Wired when it was reported, else LastSent (zero before the first
// send). The delay and the gaps between sends count from it.
func (s GateState) LastOnWire() time.Time {
	if !s.Wired.IsZero() {
		return s.Wired
	}
	return s.LastSent
}

// RecordSent records a request consuming amount sent at now; u is a
// uniform random number in [0, 1) drawn by the caller for the jitter of
// the gap after this send.
func (g *Gate) RecordSent(now time.Time, amount, u float64) {
	s := &g.State
	g.advance(now)
	s.Active++
	s.Sends++
	s.PrevSent, s.PrevJitterF, s.HasPrev = s.LastOnWire(), s.JitterF, true
	s.LastSent, s.Wired = now, time.Time{}
	s.JitterF = max(0, 1+g.Params.JitterLo+u*(g.Params.JitterHi-g.Params.JitterLo))
	g.rollBucket(now)
	s.BucketSends++
	if g.Params.Quota > 0 {
		g.openWindow(now)
		s.QuotaUsed += amount
	}
}

// RecordDone records a completion at now of the given class; latency (send
// to completion) is added up for OutcomeOK.
func (g *Gate) RecordDone(now time.Time, class OutcomeClass, latency time.Duration) {
	s := &g.State
	g.advance(now)
	if s.Active > 0 {
		s.Active--
	}
	switch class {
	case OutcomeOK:
		s.OK++
		if latency > 0 {
			s.LatencySum += latency
			s.LatencyN++
		}
	case OutcomeRefused:
		s.Refused++
	default:
		s.Other++
	}
}

// GiveBack returns the turn of a request sent at sentAt that never reached
// the server (OutcomeNotSent): if it is still the scope's last send, the
// delay runs again from the send before it, and the amount it took from
// the quota window it was counted in is returned. Otherwise (another
// request was sent since, or a turn was given back already) nothing
// changes: a given-back turn never makes the next request earlier than
// the delay after a send that did reach the server. This is how a URL that
// robots.txt disallows, or one answered from the HTTP cache, costs the
// scope none of its Crawl-delay. A send reported on the wire
// (RecordWired) reached the server: its turn is kept.
func (g *Gate) GiveBack(sentAt time.Time, amount float64) {
	s := &g.State
	if !s.HasPrev || !s.LastSent.Equal(sentAt) || !s.Wired.IsZero() {
		return
	}
	s.LastSent, s.JitterF, s.HasPrev = s.PrevSent, s.PrevJitterF, false
	s.PrevSent, s.PrevJitterF = time.Time{}, 0
	if g.Params.Quota > 0 && !s.WindowStart.IsZero() && !sentAt.Before(s.WindowStart) {
		s.QuotaUsed = max(0, s.QuotaUsed-amount)
	}
}

// advance adds the time since AreaAt to the in-flight integrals.
func (g *Gate) advance(now time.Time) {
	s := &g.State
	if !s.AreaAt.IsZero() && now.After(s.AreaAt) {
		dt := now.Sub(s.AreaAt).Seconds()
		s.InFlightSeconds += float64(s.Active) * dt
		if g.Params.Concurrency > 0 && s.Active >= g.Params.Concurrency {
			s.FullSeconds += dt
		}
	}
	if s.AreaAt.IsZero() || now.After(s.AreaAt) {
		s.AreaAt = now
	}
}

// rollBucket moves the one-second send buckets forward to now.
func (g *Gate) rollBucket(now time.Time) {
	s := &g.State
	switch el := now.Sub(s.BucketStart); {
	case s.BucketStart.IsZero() || el >= 2*time.Second:
		s.BucketStart, s.PrevBucketSends, s.BucketSends = now, 0, 0
	case el >= time.Second:
		s.BucketStart, s.PrevBucketSends, s.BucketSends = s.BucketStart.Add(time.Second), s.BucketSends, 0
	}
}

// SendRate is the recent send rate at now, in requests per second: the
// sends of the current one-second bucket and the one before, over the time
// they cover. It reads the state without changing it.
func (s GateState) SendRate(now time.Time) float64 {
	start, cur, prev := s.BucketStart, s.BucketSends, s.PrevBucketSends
	switch el := now.Sub(start); {
	case start.IsZero() || el >= 2*time.Second:
		return 0
	case el >= time.Second:
		start, prev, cur = start.Add(time.Second), cur, 0
	}
	frac := now.Sub(start).Seconds()
	return float64(prev+cur) / (1 + frac)
}

// InFlightSecondsAt is InFlightSeconds extended to now.
func (s GateState) InFlightSecondsAt(now time.Time) float64 {
	if s.AreaAt.IsZero() || !now.After(s.AreaAt) {
		return s.InFlightSeconds
	}
	return s.InFlightSeconds + float64(s.Active)*now.Sub(s.AreaAt).Seconds()
}
