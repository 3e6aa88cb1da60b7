package jobdir

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/spider"
)

// diskFull fails writes to the write-ahead log with ENOSPC once full is
// set, as a full disk does.
type diskFull struct{ full atomic.Bool }

func (d *diskFull) MaybeError(op errorfs.Op) error {
	if d.full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasSuffix(op.Path, ".log") {
		return fmt.Errorf("write %s: %w", op.Path, syscall.ENOSPC)
	}
	return nil
}

func (d *diskFull) String() string { return "disk full" }

// TestFullDiskIsAnErrorNotAPanic: once the disk is full, writes to the
// queue and the job fail with errors of the documented kinds (no panic,
// no hang), later writes fail at once, and closing does not block.
func TestFullDiskIsAnErrorNotAPanic(t *testing.T) {
	inj := &diskFull{}
	dir := filepath.Join(t.TempDir(), "job")
	j := mustOpen(t, dir, "books", Options{FS: errorfs.Wrap(vfs.Default, inj), SyncInterval: -1})
	sp := &testSpider{}
	st, err := j.Storage(&spider.Crawler{Spider: sp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Queue.Open(ctx); err != nil {
		t.Fatal(err)
	}
	push := func(i int) error {
		e := &pqueue.Entry{Info: pqueue.Info{Queue: "a"}, Req: spider.MustRequest(fmt.Sprintf("http://a.test/%d", i), sp.Parse)}
		return st.Queue.Push(ctx, e)
	}
	for i := range 10 {
		if err := push(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	inj.full.Store(true)

	done := make(chan error, 1)
	go func() {
		var err error
		for i := 10; i < 1000 && err == nil; i++ {
			err = push(i)
			if err == nil {
				err = j.Sync()
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, pqueue.ErrStorage) && !errors.Is(err, ErrWrite) {
			t.Fatalf("err = %v, want pqueue.ErrStorage or ErrWrite", err)
		}
		if !errors.Is(err, syscall.ENOSPC) && !strings.Contains(err.Error(), "no space left") {
			t.Errorf("err = %v does not say the disk is full", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writes on a full disk neither failed nor returned")
	}
	if j.Failed() == nil {
		t.Fatal("Failed() = nil after a fatal write error")
	}
	// Every later write fails at once, without touching Pebble.
	for _, f := range []func() error{func() error { return push(5000) }, j.Sync, func() error { return j.SaveStats(map[string]float64{"a": 1}) }} {
		errc := make(chan error, 1)
		go func() { errc <- f() }()
		select {
		case err := <-errc:
			if err == nil {
				t.Error("a write succeeded after the failure")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a write after the failure blocked")
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- j.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked after the failure")
	}
	// Resuming once space is back is tested end to end, with a real full
	// disk, by TestFullDiskUnderJobDir in devtools/hostile (a new process:
	// Pebble keeps its lock until this one exits).
}
