package jobdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/internal/privfs"
)

// This file detects damage to a job directory that Pebble would repair
// silently: a write-ahead log cut short (its tail is replayed up to the
// cut, so the queue goes back in time) or a state folder emptied or
// deleted (a new, empty job would start). Pebble cannot tell a cut log
// from a crash, so the job keeps its own record of progress outside the
// database: every sync writes a numbered mark both into the database (in
// the synced write itself) and, once the sync has returned, into
// JOBDIR/synced.json. The database's mark can never be older than the
// file's unless what was synced was lost afterwards.
//
// Opening a job compares the two marks. A database behind its file is
// reported (a log line, and a record that `gocrawl jobs inspect` prints):
// what was recovered, as of when, and since when progress was lost. A
// missing or empty state folder next to a mark is refused (ErrCorrupt):
// the queue is gone, and starting a new job on top of it would say
// nothing.

// timeFormat shows the times of damage reports to the millisecond: a job
// syncs many times a second.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

const (
	keySync     = PrefixState + "sync"
	keyRecovery = PrefixState + "recovery"
	syncFile    = "synced.json"
)

// SyncMark numbers a sync of the job's log.
type SyncMark struct {
	// Count is the number of syncs since the job was created.
	Count uint64 `json:"count"`
	// Time is when the sync was written.
	Time time.Time `json:"time"`
}

// Recovery records damage found when the job was opened.
type Recovery struct {
	// Detected is when the job was opened and the damage found.
	Detected time.Time `json:"detected"`
	// AsOf is the time of the last sync the database still holds: the
	// state the job continues from.
	AsOf time.Time `json:"as_of"`
	// LostSince is the time of the last sync recorded before the damage:
	// what the job did between AsOf and LostSince is lost (requests
	// queued then are gone, requests completed then are fetched again).
	LostSince time.Time `json:"lost_since"`
	// Syncs is how many synced writes were lost.
	Syncs uint64 `json:"syncs"`
}

func (r Recovery) String() string {
	return fmt.Sprintf("the job's log was cut short: the state is that of %s, %d synced writes up to %s were lost "+
		"(requests queued in between are gone; requests completed in between are fetched again)",
		r.AsOf.Format(timeFormat), r.Syncs, r.LostSince.Format(timeFormat))
}

// readSyncFile returns the mark of JOBDIR/synced.json, and false when
// there is none (a new job, or one made by an older gocrawl) or it cannot
// be read.
func readSyncFile(dir string) (SyncMark, bool) {
	var m SyncMark
	b, err := os.ReadFile(filepath.Join(dir, syncFile))
	if err != nil || json.Unmarshal(b, &m) != nil || m.Count == 0 {
		return SyncMark{}, false
	}
	return m, true
}

// syncRecordLen is the fixed size of the record in JOBDIR/synced.json: the
// JSON mark padded with spaces, then a newline.
const syncRecordLen = 128

// writeSyncFile records m in JOBDIR/synced.json, through f when it is
// open (else it opens it and returns the file for the next marks). The
// record has a fixed size and is written in place at offset 0, one
// pwrite of less than a disk sector: a reader (only Open, under the
// job's lock) sees the old mark or the new one. It is not synced: a mark
// lost in a crash is older, which can only hide damage, never invent it.
// (It used to be written to a temporary file renamed over the old one:
// four system calls and a directory update per sync of the log, 5 % of a
// JOBDIR crawl's CPU.)
func writeSyncFile(dir string, f *os.File, m SyncMark) (*os.File, error) {
	if f == nil {
		var err error
		if f, err = os.OpenFile(filepath.Join(dir, syncFile), os.O_RDWR|os.O_CREATE, privfs.FilePerm); err != nil {
			return nil, err
		}
	}
	var rec [syncRecordLen]byte
	b, _ := json.Marshal(m)
	n := copy(rec[:], b)
	for i := n; i < len(rec)-1; i++ {
		rec[i] = ' '
	}
	rec[len(rec)-1] = '\n'
	if _, err := f.WriteAt(rec[:], 0); err != nil {
		return f, err
	}
	return f, nil
}

// checkEmptied refuses a state folder that is missing or empty while the
// job's mark says it held synced data.
func checkEmptied(dir string) error {
	m, ok := readSyncFile(dir)
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: JOBDIR %s: the %s folder is missing or empty, but the job had synced its state %d times, last at %s: "+
		"its queue and dupefilter are lost. Restore the folder from a backup, or start over with --fresh (-s JOBDIR_RESET=true)",
		ErrCorrupt, dir, stateDirName, m.Count, m.Time.Format(time.RFC3339))
}

// checkSyncMarks compares the database's mark with the file's after the
// database was opened; damage is logged and recorded (unless read-only,
// where it is only kept for Recoveries). It sets the count later syncs
// continue from.
func (j *Job) checkSyncMarks(ro bool) error {
	var dbMark SyncMark
	if _, err := j.getJSON(keySync, &dbMark); err != nil {
		return err
	}
	fileMark, ok := readSyncFile(j.dir)
	j.syncs = max(dbMark.Count, fileMark.Count)
	if !ok || fileMark.Count <= dbMark.Count {
		return nil
	}
	r := Recovery{Detected: time.Now().UTC(), AsOf: dbMark.Time, LostSince: fileMark.Time, Syncs: fileMark.Count - dbMark.Count}
	j.log.Warn().Str("jobdir", j.dir).Time("state_as_of", r.AsOf).Time("lost_since", r.LostSince).Uint64("lost_syncs", r.Syncs).
		Msg("JOBDIR was damaged: " + r.String())
	if ro {
		j.pending = &r
		return nil
	}
	var all []Recovery
	if _, err := j.getJSON(keyRecovery, &all); err != nil {
		return err
	}
	all = append(all, r)
	if len(all) > 10 {
		all = all[len(all)-10:]
	}
	if err := j.putJSON(keyRecovery, all); err != nil {
		return err
	}
	// Record the damage durably now, with a mark past the file's.
	return j.Sync()
}

// Recoveries returns the damage found when the job was opened, oldest
// first: the recorded recoveries, plus, for a job opened read-only
// (`gocrawl jobs inspect`), damage found now that its next run will
// report.
func (j *Job) Recoveries() ([]Recovery, error) {
	var all []Recovery
	if _, err := j.getJSON(keyRecovery, &all); err != nil {
		return nil, err
	}
	if j.pending != nil {
		all = append(all, *j.pending)
	}
	return all, nil
}

// LastSync returns the mark of the last sync the database holds, and
// false when it holds none.
func (j *Job) LastSync() (SyncMark, bool, error) {
	var m SyncMark
	ok, err := j.getJSON(keySync, &m)
	return m, ok, err
}

// syncMark writes the next sync mark with pebble.Sync, which writes
// Pebble's log buffer out to the operating system (every earlier write
// with it; walsync.go), then fsyncs the log, then records the mark in
// JOBDIR/synced.json.
func (j *Job) syncMark() error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	m := SyncMark{Count: j.syncs + 1, Time: time.Now().UTC()}
	b, _ := json.Marshal(m)
	acks := j.acks.Load() // committed before this sync: covered by it
	if err := j.write("syncing the log", func() error { return j.db.Set([]byte(keySync), b, pebble.Sync) }); err != nil {
		return err
	}
	j.noteWritten(acks)
	if err := j.fsyncLog(); err != nil {
		return err
	}
	j.syncs = m.Count
	j.acksSynced.Store(acks)
	f, err := writeSyncFile(j.dir, j.syncF, m)
	j.syncF = f
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		j.log.Debug().Err(err).Str("jobdir", j.dir).Msg("recording the sync mark failed")
	}
	return nil
}
