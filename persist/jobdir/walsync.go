package jobdir

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file separates the two things a sync of Pebble's write-ahead log
// does: writing the log's buffer to the operating system (what a process
// crash needs: SIGKILL loses nothing the process wrote) and waiting for the
// disk (what a power failure needs: fdatasync).
//
// Pebble does both at once: a commit with pebble.Sync returns once its log
// buffer was written and fsynced, and a commit with pebble.NoSync leaves
// its record in Pebble's 32 KiB buffer until a later sync (or a full
// block) writes it. While an fsync is slow, every write waiting for one
// waits for the disk, even one that only needs its record out of the
// process. The job's file system (walFS) therefore makes Pebble's syncs of
// its log files write without fsyncing: a pebble.Sync commit returns once
// the log is written to the operating system. The job's syncer then
// fsyncs the log files itself (walFS.sync), right after (syncMark), so
// that what a power failure can lose is unchanged; Job.acked, at the bound
// of LimitUnsynced, only needs the write, which never waits for the disk.
//
// Every log file is fsynced when Pebble closes it (a rotation, Close), so
// no log is left behind unsynced; walFS.sync fsyncs the open logs oldest
// first, so the disk always holds a prefix of the log.

// walFS wraps the job's Pebble file system; see above.
type walFS struct {
	vfs.FS
	mu    sync.Mutex
	files []*walFile // open log files, oldest first
}

// isWAL reports whether Pebble's file name is a write-ahead log
// ("000123.log").
func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// Create implements vfs.FS.
func (w *walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, category)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return w.track(f), nil
}

// ReuseForWrite implements vfs.FS: Pebble recycles an old log file as a
// new one.
func (w *walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) {
		return f, err
	}
	return w.track(f), nil
}

// Unwrap implements vfs.FS.
func (w *walFS) Unwrap() vfs.FS { return w.FS }

func (w *walFS) track(f vfs.File) *walFile {
	w.mu.Lock()
	defer w.mu.Unlock()
	wf := &walFile{File: f, fs: w}
	w.files = append(w.files, wf)
	return wf
}

func (w *walFS) untrack(f *walFile) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files = slices.DeleteFunc(w.files, func(g *walFile) bool { return g == f })
}

// sync fsyncs every open log file written since its last fsync, oldest
// first. Everything written to a log before the call is durable when it
// returns nil. An error is the disk's: what was written may or may not be
// on it (the caller treats it as fatal, as Pebble does).
func (w *walFS) sync() error {
	w.mu.Lock()
	files := slices.Clone(w.files)
	w.mu.Unlock()
	for _, f := range files {
		if err := f.syncData(); err != nil {
			return err
		}
	}
	return nil
}

// walFile is a log file whose Sync and SyncData only note that Pebble
// asked: Pebble writes the log's buffer (Write) before it syncs, so the
// data has reached the operating system when they return. The real
// fdatasync is walFS.sync's, and Close's.
type walFile struct {
	vfs.File
	fs    *walFS
	dirty atomic.Bool // written since the last fdatasync

	mu     sync.Mutex // orders syncData and Close
	closed bool
}

// Write implements vfs.File.
func (f *walFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.dirty.Store(true)
	return n, err
}

// WriteAt implements vfs.File.
func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.dirty.Store(true)
	return n, err
}

// Sync implements vfs.File: the data is written already; the job's syncer
// fsyncs it.
func (f *walFile) Sync() error { return nil }

// SyncData implements vfs.File, as Sync.
func (f *walFile) SyncData() error { return nil }

// SyncTo implements vfs.File, as Sync (Pebble calls it only with
// WALBytesPerSync, which the job does not set).
func (f *walFile) SyncTo(int64) (fullSync bool, err error) { return false, nil }

// syncData fsyncs the file if it was written since its last fsync.
func (f *walFile) syncData() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || !f.dirty.Swap(false) {
		return nil
	}
	if err := f.File.SyncData(); err != nil {
		f.dirty.Store(true)
		return err
	}
	return nil
}

// Close implements vfs.File: a log is fsynced before it is closed, as
// Pebble would (a closed log receives no more writes, and walFS.sync no
// longer sees it).
func (f *walFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	var err error
	if f.dirty.Swap(false) {
		err = f.File.SyncData()
	}
	f.closed = true
	f.fs.untrack(f)
	return errors.Join(err, f.File.Close())
}

// fsyncLog makes everything written to the log so far durable. A failed
// fsync breaks the job's database, as a failed write does: the disk may
// or may not hold what was written, and a retry cannot tell (an fsync
// that failed once may succeed later without the data).
func (j *Job) fsyncLog() error {
	if err := j.breaker.Err(); err != nil {
		return j.Failed()
	}
	if err := j.wal.sync(); err != nil {
		err = j.breaker.Fail("syncing the log", err)
		return fmt.Errorf("%w: JOBDIR %s: %w%s", ErrWrite, j.dir, err, diskHint(err))
	}
	return nil
}

// writeLog writes Pebble's log buffer out to the operating system without
// waiting for the disk (an empty record committed with pebble.Sync; see
// walFS), so that a process crash keeps every write committed so far. It
// is what LimitUnsynced's bound costs: a write system call, not an fsync.
func (j *Job) writeLog() error {
	acks := j.acks.Load()
	if err := j.write("writing the log", func() error { return j.db.LogData(nil, pebble.Sync) }); err != nil {
		return err
	}
	j.noteWritten(acks)
	return nil
}

// noteWritten records that the first acks acknowledgements are written
// to the operating system.
func (j *Job) noteWritten(acks uint64) {
	for {
		cur := j.acksWritten.Load()
		if acks <= cur || j.acksWritten.CompareAndSwap(cur, acks) {
			return
		}
	}
}
