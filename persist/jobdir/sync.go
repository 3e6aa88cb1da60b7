package jobdir

import (
	"time"

	"github.com/gocrawl/gocrawl/clock"
)

// This file is the job's syncer: writes are committed without waiting for
// the disk (pebble.NoSync), and a background goroutine syncs the log
// right after them (or Options.SyncDelay later), at least every
// Options.SyncInterval. A sync writes Pebble's log buffer out, then fsyncs the
// log (walsync.go).

// Sync makes every write so far durable (fsync of the write-ahead log).
func (j *Job) Sync() error {
	if j.ro {
		return nil
	}
	return j.syncMark()
}

// Written tells the syncer that a write was committed: a WAL sync starts
// soon, grouped with those of other writes. Without it a write is synced
// within SyncInterval.
func (j *Job) Written() {
	if j.dirty == nil {
		return
	}
	select {
	case j.dirty <- struct{}{}:
	default:
	}
}

// syncLoop syncs the WAL after writes (grouping those that arrive during
// a sync, and during delay after the first of them) and at least every
// interval.
func (j *Job) syncLoop(clk clock.Clock, every, delay time.Duration) {
	defer close(j.syncDone)
	t := clk.NewTimer(every)
	defer t.Stop()
	var wait clock.Timer
	if delay > 0 {
		wait = clk.NewTimer(delay)
		wait.Stop()
		defer wait.Stop()
	}
	for {
		select {
		case <-j.stopSync:
			return
		case <-j.dirty:
			if wait == nil {
				break
			}
			wait.Reset(delay)
			select {
			case <-j.stopSync:
				return // Close syncs
			case <-wait.C():
			case <-t.C():
				wait.Stop()
			}
		case <-t.C():
		}
		// Wake-ups already sent are covered by the sync below: the
		// writes they announce were committed before they were sent.
		select {
		case <-j.dirty:
		default:
		}
		t.Reset(every)
		if err := j.Sync(); err != nil {
			j.log.Error().Err(err).Str("jobdir", j.dir).Msg("syncing the job's log failed")
			if j.Failed() != nil {
				return // the database is unusable: the crawl is stopping
			}
		}
	}
}
