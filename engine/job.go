package engine

import (
	"fmt"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// This file holds where a crawl's job plugs in: a job kept on disk that
// one process pauses and resumes (JOBDIR, Options.Job, the Job
// interface), or a job several processes crawl together (REDIS_URL,
// Options.Shared, the Shared interface in shared.go): its storage,
// restoring and checkpoints here, a shared job's seeding and end in
// loop.go. The engine imports neither backend: the caller opens one and
// passes it in.

// Job is a crawl's state kept outside the process so that the crawl can
// be paused and resumed: its scheduler's queue and dupefilter, its stats
// and the throttling scopes' state. Package jobdir implements it on Pebble
// (a *jobdir.Job, JOBDIR); `gocrawl run` opens and closes it. The engine
// calls, in order: Stats and RestoreThrottling while it is made (New),
// Storage for the scheduler, StartCheckpoints while the crawl runs, and
// Checkpoint once the scheduler is closed.
type Job interface {
	// Stats returns a collector holding the stats saved by the job's
	// previous runs (empty for a new job): counters go on from there.
	Stats() (*stats.Collector, error)
	// RestoreThrottling gives thr the scopes' saved state, so a host that
	// was backing off when the job paused is still backing off.
	RestoreThrottling(thr *throttling.Throttler) error
	// Storage returns the scheduler's storage for the crawl of c (its
	// spider, for callbacks by name; its settings).
	Storage(c *spider.Crawler) (*scheduler.Storage, error)
	// StartCheckpoints saves thr's state and st periodically until the
	// returned function is called (it returns once saving stopped).
	StartCheckpoints(thr *throttling.Throttler, st *stats.Collector) (stop func())
	// Checkpoint saves thr's state and st. A job whose storage already
	// failed (and reported it) returns nil.
	Checkpoint(thr *throttling.Throttler, st *stats.Collector) error
}

// jobStorage returns the scheduler storage of the job (JOBDIR) or of the
// shared job (REDIS_URL), or nil without one: the scheduler then uses the
// storage registered for the settings (the memory queue that spills to
// disk past SCHEDULER_MEMORY_MAX_REQUESTS, see package spillq) or memory.
func (e *Engine) jobStorage() (*scheduler.Storage, error) {
	if e.shared != nil {
		st, err := e.shared.Storage(e.crawler)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		return st, nil
	}
	if e.job == nil {
		return nil, nil
	}
	st, err := e.job.Storage(e.crawler)
	if err != nil {
		return nil, fmt.Errorf("JOBDIR: %w", err)
	}
	return st, nil
}

// restoreJob gives the throttler the scopes' saved state, so a host that
// was backing off when the job paused is still backing off.
func (e *Engine) restoreJob() error {
	if e.job == nil {
		return nil
	}
	if err := e.job.RestoreThrottling(e.thr); err != nil {
		return fmt.Errorf("JOBDIR: restoring the throttling state: %w", err)
	}
	return nil
}

// startCheckpoints saves the throttling state and stats periodically while
// the crawl runs; the returned function stops it.
func (e *Engine) startCheckpoints() func() {
	if e.job == nil {
		return func() {}
	}
	return e.job.StartCheckpoints(e.thr, e.stats)
}

// checkpointJob saves the throttling state and stats, once the scheduler
// is closed.
func (e *Engine) checkpointJob() error {
	if e.job == nil {
		return nil
	}
	if err := e.job.Checkpoint(e.thr, e.stats); err != nil {
		return fmt.Errorf("JOBDIR: saving the crawl's state: %w", err)
	}
	return nil
}
