package engine

import (
	"fmt"

	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue/spillq"
	"github.com/gocrawl/gocrawl/scheduler"
)

// This file holds what the engine does with a job directory (JOBDIR,
// Options.Job; see package jobdir for what is persisted and when) and
// where a shared job (REDIS_URL, Options.Shared) plugs in: its storage
// here, its seeding and end in loop.go.

// jobStorage returns the scheduler storage of the job (JOBDIR) or of the
// shared job (REDIS_URL), or without one the memory queue that spills to
// disk past SCHEDULER_MEMORY_MAX_REQUESTS (nil, all in memory, when 0).
func (e *Engine) jobStorage() (*scheduler.Storage, error) {
	if e.shared != nil {
		st, err := e.shared.Storage(e.crawler)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		return st, nil
	}
	if e.job == nil {
		return e.spillStorage()
	}
	// A crash repeats the requests in flight; bound the acknowledgements
	// a crash can lose from Pebble's buffer to about as many.
	e.job.LimitUnsynced(max(e.maxInflight, 16))
	st, err := e.job.Storage(e.sp)
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
	if e.job == nil || e.job.Failed() != nil {
		return nil // a failed job directory was reported when it failed
	}
	if err := e.job.Checkpoint(e.thr, e.stats); err != nil {
		return fmt.Errorf("JOBDIR: saving the crawl's state: %w", err)
	}
	return nil
}

// spillStorage returns the in-memory queue of a crawl without JOBDIR that
// keeps at most SCHEDULER_MEMORY_MAX_REQUESTS requests in memory and
// spills the rest to a temporary folder in SCHEDULER_SPILL_DIR (see
// package spillq), or nil when the limit is 0. Nothing is created on disk
// unless the queue grows past the limit.
func (e *Engine) spillStorage() (*scheduler.Storage, error) {
	limit := e.set.Int("SCHEDULER_MEMORY_MAX_REQUESTS")
	if limit <= 0 {
		return nil, nil
	}
	q, err := spillq.New(spillq.Options{
		Limit: limit,
		Dir:   e.set.String("SCHEDULER_SPILL_DIR"),
		Codec: reqcodec.Codec{Spider: e.sp},
		Log:   e.log,
	})
	if err != nil {
		return nil, fmt.Errorf("SCHEDULER_MEMORY_MAX_REQUESTS: %w", err)
	}
	return &scheduler.Storage{Queue: q}, nil
}
