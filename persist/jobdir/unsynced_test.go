package jobdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/spider"
)

// TestLimitUnsynced checks that a write leaving more acknowledgements in
// Pebble's buffer than the limit writes the log out (without an fsync),
// and that writes within the limit do not.
func TestLimitUnsynced(t *testing.T) {
	// No background syncer: only the limit writes the log out.
	f := newSyncFixture(t, Options{SyncInterval: -1}, 2)
	f.push(5)
	syncs, ack, j := f.syncs, f.ack, f.j
	before := syncs()
	ack(2)
	if got := j.acksWritten.Load(); got != 0 {
		t.Fatalf("2 acknowledgements (the limit) were written out (%d)", got)
	}
	ack(1)
	if got := j.acksWritten.Load(); got != 3 {
		t.Fatalf("3 acknowledgements in the buffer (limit 2): %d written out, want 3", got)
	}
	ack(2) // 2 since that write: within the limit again
	if got := j.acksWritten.Load(); got != 3 {
		t.Fatalf("2 acknowledgements after a write out: %d written out, want 3", got)
	}
	if got := syncs(); got != before {
		t.Fatalf("the limit made %d syncs; it only writes the log out", got-before)
	}
	if got := j.acksSynced.Load(); got != 0 {
		t.Fatalf("%d acknowledgements counted as synced without a sync", got)
	}
}

// TestSyncDelay checks Options.SyncDelay on a fake clock: a write is
// synced once the delay has passed, not before, even past LimitUnsynced
// (whose bound only writes the log out, without an fsync); and with
// nothing written the log is still synced every SyncInterval.
func TestSyncDelay(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newSyncFixture(t, Options{SyncInterval: time.Hour, SyncDelay: 10 * time.Second, Clock: clk}, 10)
	j, syncs, ack := f.j, f.syncs, f.ack
	// waitFor waits for the syncer goroutine to get somewhere; the
	// decisions themselves are driven by the fake clock.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; !cond(); i++ {
			if i == 10000 {
				t.Fatalf("timed out waiting for %s (syncs %d, timers %d)", what, syncs(), clk.Pending())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the syncer's interval timer", func() bool { return clk.Pending() == 1 })
	before := syncs()

	f.push(20)
	waitFor("the delay timer", func() bool { return clk.Pending() == 2 })
	if got := syncs(); got != before {
		t.Fatalf("a write was synced %d times before SyncDelay passed", got-before)
	}
	clk.Advance(10 * time.Second)
	waitFor("the sync after the delay", func() bool { return syncs() == before+1 })

	// 6 acknowledgements, then 6 more: past the limit of 10, so written
	// out at once, but not synced before the delay.
	waitFor("the syncer to be idle", func() bool { return clk.Pending() == 1 })
	ack(6)
	waitFor("the delay timer", func() bool { return clk.Pending() == 2 })
	ack(6)
	if got := j.acksWritten.Load(); got != 12 {
		t.Fatalf("12 acknowledgements (limit 10): %d written out, want 12", got)
	}
	if got := syncs(); got != before+1 || j.acksSynced.Load() != 0 {
		t.Fatalf("acknowledgements past the limit were synced before SyncDelay passed (%d syncs)", got-before-1)
	}
	clk.Advance(10 * time.Second)
	waitFor("the sync after the delay", func() bool { return syncs() == before+2 && j.acksSynced.Load() == 12 })

	// Nothing written: the interval still syncs.
	waitFor("the syncer to be idle", func() bool { return clk.Pending() == 1 })
	clk.Advance(time.Hour)
	waitFor("the interval's sync", func() bool { return syncs() == before+3 })
}

// TestLimitUnsyncedDoesNotWaitForTheDisk checks that a write past
// LimitUnsynced returns while the syncer's fsync is stuck (a slow disk),
// and that what a process crash would leave at that moment (the files as
// the operating system holds them) has every acknowledgement but those
// within the limit.
func TestLimitUnsyncedDoesNotWaitForTheDisk(t *testing.T) {
	disk := &slowDisk{FS: vfs.Default, entered: make(chan struct{}, 1), release: make(chan struct{})}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newSyncFixture(t, Options{FS: disk, SyncInterval: time.Hour, Clock: clk}, 2)
	f.push(10)
	if err := f.j.Sync(); err != nil {
		t.Fatal(err)
	}
	// The disk stalls: the syncer's next fsync blocks.
	disk.stall.Store(true)
	defer close(disk.release)
	f.j.Written()
	select {
	case <-disk.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the syncer did not sync after a write")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			f.ack(3) // limit 2: each writes the log out
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a write past LimitUnsynced waited for the stalled fsync")
	}
	if written, acked := f.j.acksWritten.Load(), f.j.acks.Load(); acked-written > 2 {
		t.Fatalf("%d of %d acknowledgements left in Pebble's buffer (limit 2)", acked-written, acked)
	}
	// A process crash now: the files as the operating system has them.
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, filepath.Join(f.j.Dir(), stateDirName), filepath.Join(crashed, stateDirName))
	j2 := mustOpen(t, crashed, "books", Options{SyncInterval: -1})
	defer j2.Close()
	st, err := j2.Storage(&spider.Crawler{Spider: f.sp})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Queue.Open(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := st.Queue.Len(); got != 1 {
		t.Fatalf("after the crash %d requests are queued, want 1 (10 pushed, 9 acknowledged)", got)
	}
}

// TestPowerFailureKeepsSyncs checks that what the syncer reports synced is
// on the disk (the log's syncs only write it out: walFS), and that writes
// after the last sync are what a power failure loses, the log cut to a
// prefix.
func TestPowerFailureKeepsSyncs(t *testing.T) {
	mem := vfs.NewCrashableMem()
	f := newSyncFixture(t, Options{FS: mem, SyncInterval: -1}, 2)
	// newLog makes Pebble start a new log file (a memtable flush): the
	// old one is closed, later recycled as a new one.
	newLog := func() {
		t.Helper()
		if err := f.j.DB().Flush(); err != nil {
			t.Fatal(err)
		}
	}
	f.push(10)
	f.ack(1)
	if err := f.j.Sync(); err != nil {
		t.Fatal(err)
	}
	newLog()
	f.push(3)
	if err := f.j.Sync(); err != nil {
		t.Fatal(err)
	}
	newLog()
	newLog()
	if n := len(f.j.wal.files); n != 1 {
		t.Fatalf("%d log files open after new logs, want 1 (the old ones closed, fsynced and forgotten)", n)
	}
	f.push(5)
	f.ack(3) // past the limit: written out, not synced
	if f.j.acksWritten.Load() != 4 || f.j.acksSynced.Load() != 1 {
		t.Fatalf("written %d, synced %d acknowledgements; want 4 and 1", f.j.acksWritten.Load(), f.j.acksSynced.Load())
	}
	lost := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	if err := f.j.Close(); err != nil {
		t.Fatal(err)
	}
	kept := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	for _, c := range []struct {
		name string
		fs   vfs.FS
		want int
	}{
		{"power failure before Close", lost, 12}, // the last sync: 13 pushed, 1 acknowledged
		{"power failure after Close", kept, 14},  // 18 pushed, 4 acknowledged
	} {
		// The job's sync mark file is on the real disk, ahead of the
		// lost syncs: drop it, the test is about the database.
		if err := os.Remove(filepath.Join(f.j.Dir(), syncFile)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		j := mustOpen(t, f.j.Dir(), "books", Options{FS: c.fs, SyncInterval: -1})
		st, err := j.Storage(&spider.Crawler{Spider: f.sp})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Queue.Open(f.ctx); err != nil {
			t.Fatal(err)
		}
		if got := st.Queue.Len(); got != c.want {
			t.Errorf("%s: %d requests queued, want %d", c.name, got, c.want)
		}
		if err := st.Queue.Close(f.ctx); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// slowDisk stalls the fsyncs of write-ahead logs while stall is set: the
// first one signals entered, and all of them wait for release.
type slowDisk struct {
	vfs.FS
	stall   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (d *slowDisk) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := d.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return slowFile{f, d}, nil
}

func (d *slowDisk) Unwrap() vfs.FS { return d.FS }

type slowFile struct {
	vfs.File
	d *slowDisk
}

func (f slowFile) SyncData() error {
	if f.d.stall.Load() {
		select {
		case f.d.entered <- struct{}{}:
		default:
		}
		<-f.d.release
	}
	return f.File.SyncData()
}

func (f slowFile) Sync() error { return f.SyncData() }

// copyDir copies the regular files of src into dst (created).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// syncFixture is a job's queue driven as the engine drives it, for the
// tests of when acknowledgements reach the disk.
type syncFixture struct {
	t   *testing.T
	ctx context.Context
	j   *Job
	q   *pebbleq.Store
	sp  *testSpider
	n   int // requests pushed so far
}

func newSyncFixture(t *testing.T, o Options, limit int) *syncFixture {
	t.Helper()
	j := mustOpen(t, filepath.Join(t.TempDir(), "job"), "books", o)
	j.LimitUnsynced(limit)
	sp := &testSpider{}
	st, err := j.Storage(&spider.Crawler{Spider: sp})
	if err != nil {
		t.Fatal(err)
	}
	f := &syncFixture{t: t, ctx: context.Background(), j: j, q: st.Queue.(*pebbleq.Store), sp: sp}
	if err := f.q.Open(f.ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

// push queues n more requests in one write.
func (f *syncFixture) push(n int) {
	f.t.Helper()
	for range n {
		e := &pqueue.Entry{Info: pqueue.Info{Queue: "a"}, Req: spider.MustRequest(fmt.Sprintf("http://a.test/%d", f.n), f.sp.Parse)}
		f.n++
		if err := f.q.Push(f.ctx, e); err != nil {
			f.t.Fatal(err)
		}
	}
	f.flush()
}

// ack reserves and acknowledges n requests in one write.
func (f *syncFixture) ack(n int) {
	f.t.Helper()
	for range n {
		e, err := f.q.Reserve(f.ctx, "a")
		if err != nil {
			f.t.Fatal(err)
		}
		if err := f.q.Ack(f.ctx, e.ID); err != nil {
			f.t.Fatal(err)
		}
	}
	f.flush()
}

func (f *syncFixture) flush() {
	f.t.Helper()
	if err := f.q.Flush(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// syncs returns how many syncs of the log the job has recorded.
func (f *syncFixture) syncs() uint64 {
	f.t.Helper()
	m, _, err := f.j.LastSync()
	if err != nil {
		f.t.Fatal(err)
	}
	return m.Count
}
