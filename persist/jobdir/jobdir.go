package jobdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/internal/pebblefatal"
	"github.com/gocrawl/gocrawl/internal/privfs"
)

// FormatVersion is the version of the job directory layout (key prefixes
// and record formats). A job written with another version is refused with
// ErrIncompatible.
const FormatVersion = 1

// Errors returned by Open, each wrapped with the directory and details.
// All of them match ErrBadState, which the CLI turns into exit status 2.
var (
	// ErrBadState is the parent kind of every error below.
	ErrBadState = errors.New("job directory cannot be used")
	// ErrLocked: another process has the job open.
	ErrLocked = fmt.Errorf("%w: in use by another process", ErrBadState)
	// ErrOtherSpider: the job belongs to another spider.
	ErrOtherSpider = fmt.Errorf("%w: belongs to another spider", ErrBadState)
	// ErrIncompatible: the job was written by an incompatible version.
	ErrIncompatible = fmt.Errorf("%w: incompatible format version", ErrBadState)
	// ErrCorrupt: the database does not open or lacks its metadata.
	ErrCorrupt = fmt.Errorf("%w: corrupted", ErrBadState)
)

// ErrWrite is the kind of a failed write to the job's database (a full
// disk): the crawl stops, what was written before stays, and the job
// resumes once the cause is fixed. It does not match ErrBadState.
var ErrWrite = errors.New("cannot write the job directory")

// Key prefixes of the job database. Each owner of a prefix keeps its keys
// under it; nothing else writes there.
const (
	PrefixMeta   = "\x00meta" // the metadata record (one key)
	PrefixQueue  = "q"        // pqueue/pebbleq: the request queue
	PrefixDupes  = "f"        // the dupefilter's fingerprints
	PrefixState  = "s/"       // small state records: stats, throttling, feeds
	keyStats     = PrefixState + "stats"
	keyThrottle  = PrefixState + "throttling"
	keyFeedPref  = PrefixState + "feed/"
	stateDirName = "state"
	lockName     = "LOCK"
)

// Metadata is the job's identity record.
type Metadata struct {
	// Version is the FormatVersion the job was created with.
	Version int `json:"version"`
	// Spider is the name of the spider the job belongs to.
	Spider string `json:"spider"`
	// Created is when the job was first opened.
	Created time.Time `json:"created"`
}

// DefaultSyncDelay is the sync delay of a job that `gocrawl run` opens (the
// default of the setting JOBDIR_SYNC_DELAY; Options.SyncDelay's zero value
// syncs at once). The writes of 10 ms share one fsync: a JOBDIR crawl of
// 20,000 pages ran at 0.90 to 0.99 times the speed of the same crawl in
// memory with it, about 0.8 times without (docs/performance.md, "What
// each setting costs"). A power failure can lose up to 10 ms more of the newest
// writes, fetched again on resume; what a process crash can repeat keeps
// its bound (Job.LimitUnsynced), though a kill typically repeats a few
// more requests than with 0 (docs/jobs.md).
const DefaultSyncDelay = 10 * time.Millisecond

// Options configure Open.
type Options struct {
	// Reset deletes any existing state and starts a new job (JOBDIR_RESET,
	// gocrawl run --fresh).
	Reset bool
	// SyncInterval bounds how long a write waits for its WAL sync. Writes
	// are committed without waiting for a sync (pebble.NoSync); a
	// background syncer starts a sync as soon as a write was committed
	// (Job.Written) and at least every SyncInterval, so syncs are grouped
	// and the log reaches the disk within about one fsync of each write.
	// 0 means DefaultSyncInterval; a negative value disables the syncer
	// (only Sync and Close sync: for benchmarks and tests).
	SyncInterval time.Duration
	// Log receives notices (resuming, syncing problems).
	Log zerolog.Logger
	// ReadOnly opens the job for inspection without changing it. It still
	// takes the lock: a job in use by a crawl is refused with ErrLocked.
	// Used by `gocrawl jobs inspect`, with an empty spider name (any).
	ReadOnly bool
	// FS replaces the operating system's file system under Pebble (tests
	// inject faults with it); nil means the real one.
	FS vfs.FS
	// SyncDelay is how long the syncer waits after a write before it
	// syncs the log, so that the writes of that span share one fsync.
	// 0 (the zero value) syncs right after writes, as soon as the previous
	// sync is done; DefaultSyncDelay is what `gocrawl run` uses (the
	// setting JOBDIR_SYNC_DELAY). A fast crawl on a disk whose fsync costs CPU (a
	// journaling file system, a virtual disk) then syncs hundreds of
	// times a second; a few milliseconds of delay make that tens, and a
	// JOBDIR crawl of 20,000 pages about 10 % cheaper in CPU with 10 ms
	// (see docs/performance.md). The price is what a power failure can
	// lose: up to SyncDelay more of the newest writes (see docs/jobs.md,
	// "Sync policy"). What a process crash can lose keeps its bound: that
	// of Job.LimitUnsynced, which writes Pebble's buffer out to the
	// operating system whenever it holds too many acknowledgements, delay
	// or not (within it, a kill typically repeats a few more requests).
	// Negative values count as 0.
	SyncDelay time.Duration
	// Clock drives the syncer's timers (SyncInterval, SyncDelay); nil
	// means clock.Real. Tests pass a *clock.Fake.
	Clock clock.Clock
}

// DefaultSyncInterval is the default Options.SyncInterval.
const DefaultSyncInterval = time.Second

// Job is an open job directory. Its methods are safe for concurrent use.
type Job struct {
	dir     string
	db      *pebble.DB
	wal     *walFS // Pebble's file system: its log syncs only write (walsync.go)
	lock    *os.File
	meta    Metadata
	resumed bool
	log     zerolog.Logger
	ro      bool
	// syncDelay is Options.SyncDelay (0 when no syncer runs).
	syncDelay time.Duration

	stopSync chan struct{}
	syncDone chan struct{}
	dirty    chan struct{}
	feeds    feeds

	mu     sync.Mutex
	closed bool
	// breaker guards every write to db (the queue's too): after a fatal
	// write error (a full disk) db is not written again.
	breaker pebblefatal.Breaker

	syncMu sync.Mutex
	syncs  uint64   // count of the last sync mark (damage.go)
	syncF  *os.File // JOBDIR/synced.json, once a mark was written

	// Acknowledgements committed, written out and synced (LimitUnsynced).
	maxUnsynced uint64
	limitSet    bool          // LimitUnsynced was called
	acks        atomic.Uint64 // committed
	acksWritten atomic.Uint64 // written to the operating system (a process crash keeps them)
	acksSynced  atomic.Uint64 // covered by a completed sync (fsync)
	pending     *Recovery     // damage found by a read-only open
}

// Open opens (or creates) the job directory dir for the spider named
// spiderName. It takes an exclusive lock on dir/LOCK for as long as the job
// is open, so a second process refuses with ErrLocked.
//
// An existing job is resumed: Resumed reports true. A job of another
// spider (ErrOtherSpider), of another FormatVersion (ErrIncompatible), or
// whose database cannot be read (ErrCorrupt) is refused; Open never starts
// over on top of an existing job unless opts.Reset is set.
func Open(dir, spiderName string, opts Options) (*Job, error) {
	if dir == "" {
		return nil, errors.New("JOBDIR: empty path")
	}
	if opts.SyncInterval == 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	j := &Job{dir: dir, log: opts.Log, ro: opts.ReadOnly}
	stateDir := filepath.Join(dir, stateDirName)
	if opts.ReadOnly {
		if !dbExists(stateDir) {
			return nil, fmt.Errorf("JOBDIR %s: no job here (no %s folder)", dir, stateDirName)
		}
	} else {
		// The job holds queued requests with their Authorization headers
		// and proxy passwords: private to the user.
		tightened, err := privfs.MkdirAll(dir)
		if err != nil {
			return nil, fmt.Errorf("JOBDIR %s: %w", dir, err)
		}
		if tightened {
			opts.Log.Warn().Str("jobdir", dir).Msg("JOBDIR was readable by other users; made it private (0700): it holds queued requests' credentials")
		}
	}
	// Pebble locks its folder too, but only our lock gives a clear message
	// (and covers the reset below).
	lf, err := lockFile(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("JOBDIR %s: %w", dir, err)
	}
	j.lock = lf
	if !opts.ReadOnly {
		if opts.Reset {
			if err := os.RemoveAll(stateDir); err != nil {
				j.unlock()
				return nil, fmt.Errorf("JOBDIR %s: resetting: %w", dir, err)
			}
			_ = os.Remove(filepath.Join(dir, syncFile))
			opts.Log.Info().Str("jobdir", dir).Msg("JOBDIR_RESET: starting the job over")
		}
	}
	exists := dbExists(stateDir)
	if !exists {
		if err := checkEmptied(dir); err != nil {
			j.unlock()
			return nil, err
		}
	}
	j.wal = &walFS{FS: privfs.FS(opts.FS)}
	popts := &pebble.Options{
		ErrorIfNotExists: exists,
		ReadOnly:         opts.ReadOnly,
		Logger:           j.breaker.Logger(),
		FS:               j.wal,
		// A larger memtable than Pebble's 4 MB default absorbs a queue's
		// push-then-delete churn before it reaches the disk.
		MemTableSize: 32 << 20,
		// The queue deletes its entries with SingleDelete, which is only
		// correct for keys set once (pqueue/pebbleq.Store.Ack). Pebble
		// notices a violation when a flush or compaction meets it: say
		// so loudly rather than let a request come back silently.
		EventListener: &pebble.EventListener{PossibleAPIMisuse: func(info pebble.PossibleAPIMisuseInfo) {
			opts.Log.Error().Str("jobdir", dir).Str("pebble", info.String()).
				Msg("Pebble reports a possible misuse of the job's database (a queue key written twice?); this is a gocrawl bug, please report it")
		}},
	}
	// Bloom filters let the dupefilter's lookups of new fingerprints (the
	// common case) skip reading blocks.
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	var db *pebble.DB
	err = j.breaker.Do("opening the database", func() (err error) {
		db, err = pebble.Open(stateDir, popts)
		return err
	})
	if err != nil {
		j.unlock()
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, pebblefatal.ErrFatal) {
			// Opening replays the log and writes: a full disk is not a
			// damaged job.
			return nil, fmt.Errorf("%w: JOBDIR %s: opening the database: %w%s", ErrWrite, dir, err, diskHint(err))
		}
		if exists {
			return nil, fmt.Errorf("%w: JOBDIR %s: the database does not open (%v); "+
				"move the folder away, or start over with --fresh (-s JOBDIR_RESET=true)", ErrCorrupt, dir, err)
		}
		return nil, fmt.Errorf("JOBDIR %s: creating the database: %w", dir, err)
	}
	j.db = db
	if err := j.checkMeta(spiderName, opts.ReadOnly); err != nil {
		_ = j.closeDB()
		j.unlock()
		return nil, err
	}
	if err := j.checkSyncMarks(opts.ReadOnly); err != nil {
		_ = j.closeDB()
		j.unlock()
		return nil, err
	}
	if !opts.ReadOnly && opts.SyncInterval > 0 {
		j.stopSync = make(chan struct{})
		j.syncDone = make(chan struct{})
		j.dirty = make(chan struct{}, 1)
		clk := opts.Clock
		if clk == nil {
			clk = clock.Real
		}
		j.syncDelay = max(opts.SyncDelay, 0)
		go j.syncLoop(clk, opts.SyncInterval, j.syncDelay)
	}
	return j, nil
}

// dbExists reports whether dir holds a Pebble database (not just an empty
// folder left by a crash before the first write).
func dbExists(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}

func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, privfs.FilePerm)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 200))
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			msg := "another gocrawl process is using this job; stop it first, or use another JOBDIR"
			if len(holder) > 0 {
				msg += " (holder: " + string(holder) + ")"
			}
			return nil, fmt.Errorf("%w: %s", ErrLocked, msg)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// Record who holds the lock, for the message above.
	if err := f.Truncate(0); err == nil {
		host, _ := os.Hostname()
		fmt.Fprintf(f, "pid %d on %s since %s", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	}
	return f, nil
}

func (j *Job) unlock() {
	if j.lock != nil {
		_ = unix.Flock(int(j.lock.Fd()), unix.LOCK_UN)
		_ = j.lock.Close()
		j.lock = nil
	}
}

func (j *Job) checkMeta(spiderName string, ro bool) error {
	raw, closer, err := j.db.Get([]byte(PrefixMeta))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if ro {
			return fmt.Errorf("%w: JOBDIR %s: no job metadata record", ErrCorrupt, j.dir)
		}
		// A new database, or one created by a run that died before
		// writing anything: only then may we initialise it.
		empty, err := j.isEmpty()
		if err != nil {
			return fmt.Errorf("%w: JOBDIR %s: %v", ErrCorrupt, j.dir, err)
		}
		if !empty {
			return fmt.Errorf("%w: JOBDIR %s: the database has data but no job metadata record; "+
				"start over with --fresh (-s JOBDIR_RESET=true) if that is what you want", ErrCorrupt, j.dir)
		}
		j.meta = Metadata{Version: FormatVersion, Spider: spiderName, Created: time.Now().UTC()}
		b, _ := json.Marshal(j.meta)
		if err := j.write("writing metadata", func() error { return j.db.Set([]byte(PrefixMeta), b, pebble.Sync) }); err != nil {
			return fmt.Errorf("JOBDIR %s: writing metadata: %w", j.dir, err)
		}
		if err := j.fsyncLog(); err != nil {
			return fmt.Errorf("JOBDIR %s: writing metadata: %w", j.dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("%w: JOBDIR %s: reading metadata: %v", ErrCorrupt, j.dir, err)
	}
	defer closer.Close()
	var m Metadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("%w: JOBDIR %s: metadata record: %v", ErrCorrupt, j.dir, err)
	}
	if m.Version != FormatVersion {
		return fmt.Errorf("%w: JOBDIR %s was written with job format %d; this gocrawl reads format %d. "+
			"Finish it with the gocrawl that started it, or start over with --fresh", ErrIncompatible, j.dir, m.Version, FormatVersion)
	}
	if spiderName != "" && m.Spider != spiderName {
		return fmt.Errorf("%w: JOBDIR %s belongs to spider %q, not %q; use another JOBDIR, or --fresh to replace that job",
			ErrOtherSpider, j.dir, m.Spider, spiderName)
	}
	j.meta = m
	j.resumed = true
	return nil
}

func (j *Job) isEmpty() (bool, error) {
	it, err := j.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	defer it.Close()
	return !it.First(), it.Error()
}

// Dir returns the job directory.
func (j *Job) Dir() string { return j.dir }

// DB returns the job's Pebble database. Users keep to their key prefix
// (PrefixQueue, PrefixDupes, ...) and write with pebble.NoSync: the job
// syncs the log periodically and on Close.
func (j *Job) DB() *pebble.DB { return j.db }

// Metadata returns the job's identity record.
func (j *Job) Metadata() Metadata { return j.meta }

// SyncDelay returns how long the job's syncer waits after a write before
// it syncs (Options.SyncDelay; 0: at once, or no syncer).
func (j *Job) SyncDelay() time.Duration { return j.syncDelay }

// Resumed reports whether Open found an existing job.
func (j *Job) Resumed() bool { return j.resumed }

// SaveStats stores the crawl's stats so far.
func (j *Job) SaveStats(s map[string]float64) error { return j.putJSON(keyStats, s) }

// LoadStats returns the stats saved by SaveStats, or nil.
func (j *Job) LoadStats() (map[string]float64, error) {
	var s map[string]float64
	_, err := j.getJSON(keyStats, &s)
	return s, err
}

// SaveThrottling stores the throttling scopes' state (the value is
// JSON-encoded; the throttler's Snapshot fits).
func (j *Job) SaveThrottling(v any) error { return j.putJSON(keyThrottle, v) }

// LoadThrottling decodes the state saved by SaveThrottling into v and
// reports whether there was one.
func (j *Job) LoadThrottling(v any) (bool, error) { return j.getJSON(keyThrottle, v) }

// SaveFeedOffset records that the feed named name has been written up to
// offset bytes.
func (j *Job) SaveFeedOffset(name string, offset int64) error {
	return j.putJSON(keyFeedPref+name, offset)
}

// FeedOffset returns the offset saved for the feed named name and whether
// one was saved.
func (j *Job) FeedOffset(name string) (int64, bool, error) {
	var off int64
	ok, err := j.getJSON(keyFeedPref+name, &off)
	return off, ok, err
}

// FeedOffsets returns every saved feed offset by feed name.
func (j *Job) FeedOffsets() (map[string]int64, error) {
	out := map[string]int64{}
	it, err := j.db.NewIter(&pebble.IterOptions{LowerBound: []byte(keyFeedPref), UpperBound: prefixEnd([]byte(keyFeedPref))})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		var off int64
		if err := json.Unmarshal(it.Value(), &off); err != nil {
			return nil, fmt.Errorf("%w: JOBDIR %s: feed offset %q: %v", ErrCorrupt, j.dir, it.Key(), err)
		}
		out[string(it.Key()[len(keyFeedPref):])] = off
	}
	return out, it.Error()
}

func (j *Job) putJSON(key string, v any) error {
	if j.ro {
		return fmt.Errorf("JOBDIR %s: opened read-only", j.dir)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("JOBDIR %s: encoding %s: %w", j.dir, key, err)
	}
	return j.write("saving "+key, func() error { return j.db.Set([]byte(key), b, pebble.NoSync) })
}

func (j *Job) getJSON(key string, v any) (bool, error) {
	raw, closer, err := j.db.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("%w: JOBDIR %s: record %s: %v", ErrCorrupt, j.dir, key, err)
	}
	return true, nil
}

// Close syncs and closes the database and releases the lock. Users of DB
// must be done with it.
func (j *Job) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if j.stopSync != nil {
		close(j.stopSync)
		<-j.syncDone
	}
	var errs []error
	if !j.ro && j.Failed() == nil {
		if err := j.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("syncing: %w", err))
		}
	}
	if err := j.closeDB(); err != nil {
		errs = append(errs, fmt.Errorf("closing the database: %w", err))
	}
	j.syncMu.Lock()
	if j.syncF != nil {
		_ = j.syncF.Close()
		j.syncF = nil
	}
	j.syncMu.Unlock()
	j.unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("JOBDIR %s: %w", j.dir, err)
	}
	return nil
}

// closeDB closes the database, unless a fatal write error broke it:
// closing would wait on locks the failed write still holds. The process
// exiting releases it; what was written before the failure is on disk.
func (j *Job) closeDB() error {
	if j.breaker.Err() != nil {
		return nil // reported when it happened
	}
	return j.breaker.Do("closing", j.db.Close)
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// write runs fn, a write to the database: Pebble's fatal errors (a full
// disk) become errors of kind ErrWrite, and after one every write fails at
// once with the same error, without touching the broken database.
func (j *Job) write(what string, fn func() error) error {
	err := j.breaker.Do(what, fn)
	if err != nil && errors.Is(err, pebblefatal.ErrFatal) {
		return fmt.Errorf("%w: JOBDIR %s: %w%s", ErrWrite, j.dir, err, diskHint(err))
	}
	return err
}

// diskHint adds advice to a write error caused by a full disk.
func diskHint(err error) string {
	if errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "no space left") {
		return "; free some space and run the same command again to resume the job"
	}
	return ""
}

// Failed returns the write error that made the job's database unusable
// (a full disk), or nil.
func (j *Job) Failed() error {
	if err := j.breaker.Err(); err != nil {
		return fmt.Errorf("%w: JOBDIR %s: %w%s", ErrWrite, j.dir, err, diskHint(err))
	}
	return nil
}
