package pqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/internal/registry"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// PriorityQueue is what a scheduler pops requests from.
//
// A popped request is reserved, not removed: it leaves the queue for good
// when Ack is called with its ID (after its outcome and the requests its
// callback produced are recorded), and comes back with Nack. With a
// persistent Store, reservations never acknowledged come back when the
// queue is reopened.
//
// Implementations are safe for concurrent use.
type PriorityQueue interface {
	// Open opens the store and rebuilds the queue's index from it.
	Open(ctx context.Context) error
	// Push queues req with its throttling scopes and effective priority.
	// A positive throttling_delay meta (seconds) keeps it out of
	// competition until that long after now.
	Push(ctx context.Context, now time.Time, req *spider.Request, scopes throttling.Scopes, priority int) (ID, error)
	// Pop returns the next request to send at now, or nil and how long to
	// wait before asking again: a positive duration, or 0 for "when
	// something changes" (a request completes, a request is pushed).
	Pop(ctx context.Context, now time.Time) (*Popped, time.Duration, error)
	// Ack forgets a popped request for good.
	Ack(ctx context.Context, id ID) error
	// Nack puts a popped request back in line (for example when it could
	// not be started).
	Nack(ctx context.Context, id ID) error
	// Len returns how many requests wait in the queue (reserved ones not
	// counted).
	Len() int
	// Close closes the store; a persistent store keeps what is not acked.
	Close(ctx context.Context) error
}

// Deduplicator is implemented by priority queues that keep the crawl's
// dupefilter themselves, checking a request's fingerprint atomically with
// storing it: a frontier shared by processes (the Redis frontier does both
// in one script call, inside Redis, so two workers finding the same link
// at once store it once). The scheduler then uses no dupefilter.Set of its
// own: it hands the fingerprint over with PushUnique and learns later,
// through the function given to OnPushed, whether each request was stored
// or dropped as a duplicate (stats, DUPEFILTER_DEBUG).
type Deduplicator interface {
	// PushUnique is Push for a request whose fingerprint is fp; with
	// filter false (Request.DontFilter) the request is stored whatever its
	// fingerprint, and its fingerprint is not recorded.
	PushUnique(ctx context.Context, now time.Time, req *spider.Request, scopes throttling.Scopes, priority int, fp dupefilter.Fingerprint, filter bool) error
	// OnPushed registers fn, called once per request given to PushUnique
	// when its fate is known: stored, or dropped as a duplicate. It is
	// called from any goroutine.
	OnPushed(fn func(req *spider.Request, duplicate bool))
}

// BatchPopper is implemented by priority queues that can hand out several
// requests in one call: a queue whose every Pop is a round trip to shared
// storage (the Redis frontier) saves round trips when several slots are
// free at once. Every request returned is admitted at the call and must be
// started at once, like Pop's.
type BatchPopper interface {
	// PopN is Pop for up to n requests (n >= 1); with none ready it
	// returns how long to wait, as Pop does.
	PopN(ctx context.Context, now time.Time, n int) ([]*Popped, time.Duration, error)
}

// Popped is a request taken out of a PriorityQueue.
type Popped struct {
	// ID is the entry's ID, for Ack and Nack.
	ID ID
	// Req is the request.
	Req *spider.Request
	// Scopes are the request's throttling scopes.
	Scopes throttling.Scopes
	// Admitted is true when the queue has already recorded the send with
	// Gate.Sent at SentAt (throttling-aware queues); false means the caller
	// must wait for the scopes itself (engine-gated mode).
	Admitted bool
	// SentAt is when the send was recorded, when Admitted.
	SentAt time.Time
}

// Gate is what a throttling-aware queue needs from the throttler
// (*throttling.Throttler implements it).
type Gate interface {
	// ScopeWait reports how long a request consuming amount of scope must
	// wait at now: 0, a delay, or throttling.UntilSlotFree.
	ScopeWait(now time.Time, scope string, amount float64) time.Duration
	// Sent records that a request with scopes was sent at now.
	Sent(now time.Time, scopes throttling.Scopes)
	// Watch registers fn, called (under the throttler's lock, from any
	// goroutine) after any change of a scope's state. fn must be quick and
	// must not call back into the throttler.
	Watch(fn func(scope string))
}

// QuotaSharer is implemented by gates that know the scopes' quotas. The
// throttling-aware queue uses it to break priority ties in favour of the
// request that uses the larger share of its scopes' available quota (the
// quota-share ordering of Scrapy's throttling design, PR #6931), so that
// big requests do not get stuck behind a stream of small ones.
type QuotaSharer interface {
	// QuotaShare returns amount as a fraction of the quota scope has left
	// in its current window: 0 for a scope without a quota or a zero
	// amount, values above 1 when amount exceeds what is left.
	QuotaShare(scope string, amount float64) float64
}

// Deps are what a priority queue is built from.
type Deps struct {
	// Store keeps the entries; nil means a new MemoryStore.
	Store Store
	// Gate is the throttler. Throttling-aware queues require it.
	Gate Gate
	// Clock is used for logs and timers; nil means the real clock.
	Clock clock.Clock
	// Log receives debug output (SCHEDULER_DEBUG).
	Log zerolog.Logger
	// Settings are the crawl's settings; may be nil in tests.
	Settings *settings.Settings
}

// Factory builds a priority queue.
type Factory func(d Deps) (PriorityQueue, error)

var factories registry.Registry[Factory]

// Register makes a priority queue available under name for the
// SCHEDULER_PRIORITY_QUEUE setting. Registering a name twice replaces the
// first factory.
func Register(name string, f Factory) {
	factories.Register(name, f)
}

// New builds the priority queue registered under name. An unknown name
// gives an error listing the registered ones.
func New(name string, d Deps) (PriorityQueue, error) {
	f, ok := factories.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("SCHEDULER_PRIORITY_QUEUE: unknown priority queue %q (registered: %v)", name, factories.Names())
	}
	if d.Store == nil {
		d.Store = NewMemoryStore()
	}
	if d.Clock == nil {
		d.Clock = clock.Real
	}
	return f(d)
}
