package throttling

import (
	"context"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// ScopeManager keeps the run-time state of one throttling scope: how many
// of its requests are in flight, its current delay, backoff level, quota.
// It is the Go form of ThrottlingScopeManagerProtocol in Scrapy's
// throttling design (PR #6931). One
// instance is created per scope (THROTTLING_SCOPE_MANAGER, or the scope's
// "manager" key); the Throttler serialises calls to it, so implementations
// need no locking.
type ScopeManager interface {
	// CanSend reports how long to wait before a request consuming amount of
	// the quota may be sent at now: 0 means now, UntilSlotFree means when
	// one of the scope's requests completes.
	CanSend(now time.Time, amount float64) time.Duration
	// RecordSent records that a request consuming amount was sent at now.
	RecordSent(now time.Time, amount float64)
	// RecordDone records that one of the scope's requests completed.
	RecordDone(now time.Time)
	// RecordBackoff records a backoff trigger (see BackoffSignal).
	RecordBackoff(now time.Time, sig BackoffSignal)
	// ReconcileQuota corrects the quota used in the current window: by a
	// delta (consumed), or from what the server says is left (remaining).
	// Nil pointers are absent values.
	ReconcileQuota(now time.Time, consumed, remaining *float64)
	// SetBaseDelay changes the configured delay (robots.txt Crawl-delay).
	SetBaseDelay(d time.Duration)
	// SetConcurrency changes the configured concurrency (robots.txt).
	SetConcurrency(n int)
	// IsIdle reports whether the scope's state may be evicted: nothing in
	// flight, not backing off, and (when maxIdle > 0) unused for maxIdle.
	IsIdle(now time.Time, maxIdle time.Duration) bool
}

// SlotFreeChecker is an optional ScopeManager method: how long a request
// must wait when it does not need a concurrency slot of the scope (its
// delay, backoff and quota still apply). The throttler uses it for
// requests admitted with WithoutSlot (robots.txt, fetched while the
// request that needs it holds the host's slot). Managers without it are
// treated as ready when only their concurrency blocks.
type SlotFreeChecker interface {
	CanSendWithoutSlot(now time.Time, amount float64) time.Duration
}

// OutcomeRecorder is an optional ScopeManager method that receives a
// completion together with how it ended, in place of RecordDone followed
// by RecordBackoff. The throttler calls it, when a scope's manager has it,
// for every request of the scope that completes. The default
// ThrottlingScopeManager implements it: its rate controller measures the
// accepted responses, and its latency control their latency.
type OutcomeRecorder interface {
	RecordOutcome(now time.Time, o Outcome)
}

// Outcome is how one request of a scope ended.
type Outcome struct {
	// Class is ok (accepted by the server), refused (a backoff trigger)
	// or other.
	Class OutcomeClass
	// Latency is the time from the send to the completion (0 when the
	// request was not downloaded).
	Latency time.Duration
	// Signal is what the outcome tells the scope's policy: a backoff
	// trigger, a server delay. Its zero value tells nothing.
	Signal Signal
	// SentAt and Amount are the request's send time and the quota amount
	// it took in the scope, set for OutcomeNotSent: the gate gives that
	// turn back (Gate.GiveBack).
	SentAt time.Time
	Amount float64
}

// BackoffSignal describes one backoff trigger for a scope.
type BackoffSignal struct {
	// SentAt is when the request whose outcome triggered backoff was sent;
	// zero for triggers not tied to a request (DelayScope). Responses to
	// requests sent before the scope's latest backoff step count toward
	// that step instead of multiplying the delay again.
	SentAt time.Time
	// Delay, when positive, is a hard minimum: nothing is sent for the scope
	// until it elapses (Retry-After, RateLimit-Reset, DelayScope).
	Delay time.Duration
	// Uncapped exempts Delay from BACKOFF_MAX_DELAY (DelayScope).
	Uncapped bool
}

// Manager assigns throttling scopes to requests and turns responses and
// download errors into backoff feedback. It is the Go form of
// ThrottlingManagerProtocol in Scrapy's throttling design (PR #6931); set
// THROTTLING_MANAGER to the registered name of your implementation. Embed
// *DefaultManager to change one aspect and keep the rest.
type Manager interface {
	// Scopes returns the scopes of req. The throttler asks it only for
	// requests without a "throttling_scopes" meta: the meta, when set, is
	// the request's whole set of scopes.
	Scopes(ctx context.Context, req *spider.Request) (Scopes, error)
	// ResponseBackoff returns the feedback for a response of a request
	// with the given scopes; nil means no feedback.
	ResponseBackoff(ctx context.Context, res *spider.Response, scopes Scopes) (Feedback, error)
	// ExceptionBackoff returns the feedback for a download error.
	ExceptionBackoff(ctx context.Context, req *spider.Request, err error, scopes Scopes) (Feedback, error)
}

// Feedback maps scope names to what one outcome means for each scope.
type Feedback map[string]ScopeFeedback

// ScopeFeedback is one outcome's meaning for one scope.
type ScopeFeedback struct {
	// Trigger: the outcome is a backoff trigger for the scope.
	Trigger bool
	// Delay: a hard minimum delay announced by the server (Retry-After,
	// RateLimit-Reset), already capped at BACKOFF_MAX_DELAY; 0 = none.
	Delay time.Duration
	// Consumed corrects the quota used by a delta (actual - estimated).
	Consumed *float64
	// Remaining sets the quota left in the window, as reported by the server.
	Remaining *float64
	// RateLimit is what the response's RateLimit headers said (any
	// response, not only triggers), for the scope's rate controller; nil
	// when there were none. The default manager gives it to the request's
	// host scope.
	RateLimit *RateLimit
}
