package jobdir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// This file wires a Job into a crawl: a *Job is an engine.Job, and the
// engine calls, in order:
//
//	j.Stats()                    // the stats collector, restored
//	j.RestoreThrottling(thr)     // scopes keep their backoff
//	j.Storage(c)                 // the scheduler's queue and dupefilter
//	stop := j.StartCheckpoints(thr, st)
//	...crawl...
//	stop(); j.Checkpoint(thr, st) // after the scheduler is closed
//
// and the CLI opens the job before the engine (so bad state exits 2),
// calls ResumeOffset for each feed, registers the feeds with SetFeeds, and
// closes the job after the engine returns.

// DefaultCheckpointInterval is how often the throttling state and the
// stats are saved while the crawl runs (they are always saved at close).
const DefaultCheckpointInterval = 5 * time.Second

// Feed is what a job needs from an item feed exporter (*feed.Exporter
// implements it).
type Feed interface {
	// Path names the feed's file; it keys the saved offset.
	Path() string
	// Offset is the byte offset of the end of the last item written.
	Offset() int64
	// Flush writes buffered items to the file.
	Flush() error
}

type feeds struct {
	mu sync.Mutex
	fs []Feed
}

// SetFeeds registers the crawl's file feeds. From then on every
// acknowledged request first flushes them and records their offsets in the
// same write as the acknowledgement, so the saved offset never lags the
// queue: after a pause or a crash, ResumeOffset gives a position where the
// items of every request that will not be fetched again are kept and the
// items of requests that will be fetched again are cut.
func (j *Job) SetFeeds(fs ...Feed) {
	j.feeds.mu.Lock()
	j.feeds.fs = append([]Feed(nil), fs...)
	j.feeds.mu.Unlock()
}

// recordFeeds flushes the feeds and adds their offsets to b.
func (j *Job) recordFeeds(b *pebble.Batch) error {
	j.feeds.mu.Lock()
	defer j.feeds.mu.Unlock()
	for _, f := range j.feeds.fs {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("flushing feed %s: %w", f.Path(), err)
		}
		v, _ := json.Marshal(f.Offset())
		if err := b.Set([]byte(keyFeedPref+f.Path()), v, nil); err != nil {
			return err
		}
	}
	return nil
}

// ResumeOffset returns where a resumed crawl must continue the feed file
// at path and whether the job has an offset for it (false: a new feed,
// nothing to cut). It is the offset saved with the last durable
// acknowledgement, lowered to the end of the file's last complete line if
// the file is shorter (a power failure can lose file data the log had
// synced), so the file is always cut at an item boundary.
func (j *Job) ResumeOffset(path string) (int64, bool, error) {
	off, ok, err := j.FeedOffset(path)
	if err != nil || !ok {
		return 0, ok, err
	}
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if !st.Mode().IsRegular() {
		return 0, false, nil // a stream (device, pipe): nothing to cut
	}
	if st.Size() >= off {
		return off, true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	end, err := afterLastNewline(f, st.Size())
	if err != nil {
		return 0, false, err
	}
	j.log.Warn().Str("feed", path).Int64("saved_offset", off).Int64("file_size", st.Size()).Int64("resume_at", end).
		Msg("the feed file is shorter than the job recorded (power failure?); resuming after its last complete line")
	return end, true, nil
}

// afterLastNewline returns the offset just after the last '\n' of the
// first size bytes of f (0 when there is none), reading backwards a chunk
// at a time rather than loading the file.
func afterLastNewline(f io.ReaderAt, size int64) (int64, error) {
	var buf [32 << 10]byte
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := f.ReadAt(buf[:end-start], start)
		if n < int(end-start) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// Storage returns the scheduler storage of the job for the crawl of c:
// the Pebble queue and dupefilter, bound to c.Spider for callback names.
// Pass it as scheduler.Deps.Storage. Unless LimitUnsynced was called, the
// acknowledgements a crash can lose from Pebble's buffer are bounded by
// about as many requests as a crash repeats anyway: c's
// CONCURRENT_REQUESTS, at least 16.
func (j *Job) Storage(c *spider.Crawler) (*scheduler.Storage, error) {
	if !j.limitSet && c.Settings != nil {
		j.LimitUnsynced(max(c.Settings.Int("CONCURRENT_REQUESTS"), 16))
	}
	q, err := pebbleq.New(j.db, pebbleq.Options{
		Codec:      reqcodec.Codec{Spider: c.Spider},
		Prefix:     PrefixQueue,
		OnAck:      j.recordFeeds,
		AfterWrite: j.Written,
		Write:      j.write,
		// The engine flushes once per turn of its loop: a page's
		// follow-up requests, their fingerprints and the page's
		// acknowledgement reach the disk as one write.
		GroupWrites: true,
		AfterAcks:   j.acked,
	})
	if err != nil {
		return nil, err
	}
	set := pebbleq.NewSet(j.db, PrefixDupes)
	q.AttachSet(set)
	return &scheduler.Storage{Queue: q, Seen: set}, nil
}

// LimitUnsynced bounds the acknowledgements committed but still in
// Pebble's own buffer (0: no bound, the default). Writes go to Pebble
// without waiting for anything (pebble.NoSync), and Pebble keeps the
// newest of them in its buffer until its log is next written out; a
// background syncer writes the log out and fsyncs it right after them.
// While an fsync is slow (a disk shared with heavy writers), the
// acknowledgements of every request that finished meanwhile would stay in
// that buffer, and a process crash would fetch them all again. With a
// bound, a write that leaves more than n acknowledgements in the buffer
// first writes it out to the operating system (a write system call; it
// does not wait for the disk or for the syncer's fsync under way), so a
// process crash repeats at most about n requests beyond those in flight.
// Storage sets n to the crawl's CONCURRENT_REQUESTS (at least 16) unless
// this was called before it.
func (j *Job) LimitUnsynced(n int) {
	j.maxUnsynced = uint64(max(n, 0))
	j.limitSet = true
}

// acked records n acknowledgements committed (pebbleq.Options.AfterAcks),
// and writes the log out when more than LimitUnsynced are still in
// Pebble's buffer. It never waits for an fsync, so Options.SyncDelay
// spaces the fsyncs without making the crawl wait at the bound.
func (j *Job) acked(n int) error {
	total := j.acks.Add(uint64(n))
	if j.maxUnsynced == 0 {
		return nil
	}
	if total-j.acksWritten.Load() <= j.maxUnsynced {
		return nil
	}
	return j.writeLog()
}

// Stats returns a collector holding the stats saved by the previous runs
// of the job (empty for a new job). Counters go on from where they were;
// the engine resets the per-run values (start_time, elapsed_time_seconds).
func (j *Job) Stats() (*stats.Collector, error) {
	c := stats.New()
	saved, err := j.LoadStats()
	if err != nil {
		return nil, err
	}
	for k, v := range saved {
		c.Set(k, v)
	}
	return c, nil
}

// RestoreThrottling loads the saved state of the throttling scopes into
// thr: a host that was backing off when the job paused is still backing
// off, Retry-After blocks and robots.txt Crawl-delays still apply.
func (j *Job) RestoreThrottling(thr *throttling.Throttler) error {
	var snaps []throttling.ScopeSnapshot
	ok, err := j.LoadThrottling(&snaps)
	if err != nil || !ok {
		return err
	}
	thr.Restore(snaps)
	j.log.Info().Int("scopes", len(snaps)).Msg("resuming job: throttling state restored")
	return nil
}

// Checkpoint saves the throttling state and the stats. It does not sync:
// the periodic sync and Close do. After a write failure made the database
// unusable (Failed) it saves nothing and returns nil: the failure was
// reported when it happened.
func (j *Job) Checkpoint(thr *throttling.Throttler, st *stats.Collector) error {
	if j.Failed() != nil {
		return nil
	}
	if thr != nil {
		if err := j.SaveThrottling(thr.Snapshot()); err != nil {
			return err
		}
	}
	if st != nil {
		if err := j.SaveStats(st.Snapshot()); err != nil {
			return err
		}
	}
	return nil
}

// StartCheckpoints calls Checkpoint every DefaultCheckpointInterval until
// the returned function is called.
func (j *Job) StartCheckpoints(thr *throttling.Throttler, st *stats.Collector) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(DefaultCheckpointInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := j.Checkpoint(thr, st); err != nil {
					j.log.Error().Err(err).Str("jobdir", j.dir).Msg("saving the job's state failed")
					if j.Failed() != nil {
						return // the database is unusable: the crawl is stopping
					}
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
}
