// Package scheduler decides which request the engine sends next.
//
// The engine asks Next(now) whenever it has a free slot. The default
// ThrottlingAwareScheduler only yields requests whose throttling scopes are
// ready, so a throttled host never holds a slot or blocks other hosts. The
// plain Scheduler yields requests in priority order and leaves throttling
// to the engine, which then waits on the scopes while holding a slot (the
// "engine-gated" mode of Scrapy's throttling design, PR #6931, kept for
// comparison).
//
// Both drop requests beyond DEPTH_LIMIT (stat scheduler/depth_limited) and
// duplicates (package dupefilter, stat dupefilter/filtered), order by
// Priority - Depth*DEPTH_PRIORITY, and keep their queue in a pqueue.Store:
// in memory, or persistent storage registered with RegisterStorage (JOBDIR).
// docs/architecture.md, "Scheduler", describes the data structures.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/internal/registry"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Job is a request taken out of the scheduler to be downloaded.
type Job struct {
	// Req is the request.
	Req *spider.Request
	// Scopes are the request's throttling scopes, assigned at enqueue.
	Scopes throttling.Scopes
	// Admitted is true when the scheduler has already recorded the send
	// with the throttler (throttling-aware scheduling); when false the
	// engine must wait for admission with Throttler.Admit while holding a slot.
	Admitted bool
	// SentAt is when the request was admitted.
	SentAt time.Time
	// ID identifies the job within its queue until Done.
	ID uint64
}

// Scheduler holds the crawl's pending requests.
//
// Implementations must be safe for concurrent use: the engine calls them
// from its loop while throttler notifications arrive from other goroutines.
type Scheduler interface {
	// Open prepares the scheduler (restoring persisted state).
	Open(ctx context.Context) error
	// Enqueue adds req. It returns false (and no error) when the request is
	// dropped on purpose (duplicate, depth limit) and an error when it
	// cannot be queued (invalid scopes, unpersistable request).
	Enqueue(ctx context.Context, req *spider.Request) (bool, error)
	// Next returns the best request that may be sent at now, or nil and
	// how long until asking again is useful: a positive duration, or 0 for
	// "when something changes" (a request completes or is enqueued).
	Next(ctx context.Context, now time.Time) (*Job, time.Duration, error)
	// Done marks job as finished: its outcome has been recorded and the
	// requests its callback produced are enqueued, so a persistent queue may
	// forget it.
	Done(ctx context.Context, job *Job) error
	// Len returns the number of requests waiting (not counting jobs handed
	// out and not yet Done).
	Len() int
	// Close releases resources; pending requests are kept by persistent
	// schedulers.
	Close(ctx context.Context) error
}

// Batcher is implemented by schedulers that can hand out several jobs in
// one call (their queue is a pqueue.BatchPopper): the engine asks for as
// many as it has free slots. Every job returned must be started at once.
type Batcher interface {
	// NextN is Next for up to n jobs (n >= 1).
	NextN(ctx context.Context, now time.Time, n int) ([]*Job, time.Duration, error)
}

// Flusher is implemented by schedulers whose storage groups its writes
// (JOBDIR): what Enqueue and Done recorded since the last Flush reaches the
// disk, in order, when Flush is called. The engine calls it once per turn
// of its loop, before it starts new requests, so that a crash never keeps
// a page's acknowledgement without the requests its callback produced. It
// is the store's interface (pqueue.Flusher), which the default scheduler
// passes on; an error wraps pqueue.ErrStorage.
type Flusher = pqueue.Flusher

// Notifier is implemented by schedulers (and priority queues) that can
// tell when a queued request may have become ready although no download
// ended: a slot freed by a request sent outside the scheduler, a delay
// shortened by a configuration change. The engine selects on Changed while
// it sleeps and calls Next again when it fires. Values are coalesced.
type Notifier interface {
	Changed() <-chan struct{}
}

// Throttler is what a scheduler needs from the throttler
// (*throttling.Throttler implements it): the admission gate its priority
// queue consults (pqueue.Gate), plus assigning a request's scopes when it
// is enqueued and the engine-gated mode's whole-request wait.
type Throttler interface {
	pqueue.Gate
	// Scopes returns the throttling scopes of req.
	Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error)
	// Wait reports how long a request with scopes must wait at now.
	Wait(now time.Time, scopes throttling.Scopes) time.Duration
}

// Deps are what a scheduler is built from.
type Deps struct {
	Settings  *settings.Settings
	Spider    spider.Spider
	Throttler Throttler
	Stats     *stats.Collector
	Log       zerolog.Logger
	Clock     clock.Clock
	// Storage replaces the storage chosen from the settings (tests, or a
	// caller that manages the job directory itself). Nil fields mean memory.
	Storage *Storage
}

// Factory builds a scheduler.
type Factory func(d Deps) (Scheduler, error)

var factories registry.Registry[Factory]

// Register makes a scheduler available under name for the SCHEDULER
// setting.
func Register(name string, f Factory) {
	factories.Register(name, f)
}

// New builds the scheduler named by the SCHEDULER setting.
func New(d Deps) (Scheduler, error) {
	name := d.Settings.String("SCHEDULER")
	f, ok := factories.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("SCHEDULER: unknown scheduler %q (registered: %v)", name, factories.Names())
	}
	return f(d)
}

// ErrClosed is returned by schedulers used after Close.
var ErrClosed = errors.New("scheduler closed")
