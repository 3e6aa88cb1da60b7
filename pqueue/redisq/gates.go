package redisq

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// GateParams are the parameters of a scope's gate, as the Lua scripts
// read them: written by the scope's policy (in Go), read at every
// admission (in Lua). They follow the throttling package's Policy/Gate
// contract.
type GateParams struct {
	// Delay is the delay between sends, before jitter.
	Delay time.Duration
	// JitterLo and JitterHi are the jitter range in force: a send's jitter
	// factor is 1 + uniform(JitterLo, JitterHi).
	JitterLo, JitterHi float64
	// Concurrency is the number of requests in flight allowed (0 =
	// unlimited).
	Concurrency int
	// BlockedUntil is a hard minimum: nothing is sent before it.
	BlockedUntil time.Time
	// Quota is what the requests of one Window may consume (0 = none).
	Quota  float64
	Window time.Duration
	// ValidUntil is when the policy's time-based state changes the
	// parameters (zero: never by itself); from then on the gate is stale and
	// the next admission asks the policy again.
	ValidUntil time.Time
}

// encode returns the "d,jl,jh,c,bu,q,w,vu" form the scripts read (times
// in Unix milliseconds, 0 for none).
func (p GateParams) encode() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	ms := func(t time.Time) string {
		if t.IsZero() {
			return "0"
		}
		return msString(t)
	}
	return strings.Join([]string{
		f(float64(p.Delay) / float64(time.Millisecond)), f(p.JitterLo), f(p.JitterHi), strconv.Itoa(p.Concurrency),
		ms(p.BlockedUntil), f(p.Quota), f(float64(p.Window) / float64(time.Millisecond)), ms(p.ValidUntil),
	}, ",")
}

// GateState is a gate's state and counters, as the scripts keep them (the
// policy reads them to measure rates).
type GateState struct {
	Active      int
	LastSent    time.Time
	JitterF     float64
	QuotaUsed   float64
	WindowStart time.Time
	// Sends counts every recorded send; OK, Refused (backoff triggers) and
	// Other count outcomes by class.
	Sends, OK, Refused, Other int64
	// RateStart starts the current one-second bucket of sends; RateCur and
	// RatePrev count the sends of this bucket and of the one before.
	RateStart         time.Time
	RateCur, RatePrev int64
}

// Gates is where the frontier gets gate parameters from: the throttling
// policies of the scopes (the throttling package's Policy, run in Go and
// kept in Redis by the Throttling backend of this package).
type Gates interface {
	// Initial returns the parameters of a scope in its configured state,
	// written with the first request of a scope the job has never seen (if
	// another worker has not created its gate meanwhile).
	Initial(scope string) GateParams
	// Refresh brings scope's parameters up to date from its policy: its
	// gate is missing, or stale (its ValidUntil has passed).
	Refresh(ctx context.Context, scope string) error
}

// Outcome classes counted by the gates.
const (
	ClassNone    = ""   // not downloaded, or a lease given up
	ClassOK      = "ok" // a response that is not a backoff trigger
	ClassRefused = "rf" // a backoff trigger (429, 503, a network error...)
	ClassOther   = "ot" // anything else (a download error that is not a trigger)
)
