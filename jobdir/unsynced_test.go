package jobdir

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/spider"
)

// TestLimitUnsynced checks that a write leaving more acknowledgements
// unsynced than the limit waits for a sync of the log, and that writes
// within the limit do not.
func TestLimitUnsynced(t *testing.T) {
	// No background syncer: only the limit syncs.
	f := newSyncFixture(t, Options{SyncInterval: -1}, 2)
	f.push(5)
	syncs, ack := f.syncs, f.ack
	before := syncs()
	ack(2)
	if got := syncs(); got != before {
		t.Fatalf("2 acknowledgements (the limit) made %d syncs", got-before)
	}
	ack(1)
	if got := syncs(); got != before+1 {
		t.Fatalf("3 unsynced acknowledgements (limit 2) made %d syncs, want 1", got-before)
	}
	ack(2) // 2 since that sync: within the limit again
	if got := syncs(); got != before+1 {
		t.Fatalf("2 acknowledgements after a sync made %d more syncs", got-before-1)
	}
}

// TestSyncDelay checks Options.SyncDelay on a fake clock: a write is
// synced once the delay has passed, not before; acknowledgements past
// half of LimitUnsynced are synced at once, delay or not; and with
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

	// 6 unsynced acknowledgements: past half of the limit of 10, so
	// synced without waiting for the delay (the clock does not move).
	ack(6)
	waitFor("the urgent sync", func() bool { return syncs() == before+2 })

	// 3 more: within half the limit, so they wait for the delay again.
	waitFor("the syncer to be idle", func() bool { return clk.Pending() == 1 && j.acksSynced.Load() == 6 })
	ack(3)
	waitFor("the delay timer", func() bool { return clk.Pending() == 2 })
	if got := syncs(); got != before+2 {
		t.Fatalf("3 unsynced acknowledgements (limit 10) were synced before SyncDelay passed")
	}
	clk.Advance(10 * time.Second)
	waitFor("the sync after the delay", func() bool { return syncs() == before+3 })

	// Nothing written: the interval still syncs.
	waitFor("the syncer to be idle", func() bool { return clk.Pending() == 1 })
	clk.Advance(time.Hour)
	waitFor("the interval's sync", func() bool { return syncs() == before+4 })
}

// TestLimitUnsyncedWaitsForSyncer checks that with a background syncer a
// write past LimitUnsynced returns once the syncer's sync covers it (the
// clock does not move: the syncer is woken, not its timers).
func TestLimitUnsyncedWaitsForSyncer(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newSyncFixture(t, Options{SyncInterval: time.Hour, Clock: clk}, 2)
	j := f.j
	f.push(10)
	for round := 1; round <= 3; round++ {
		// 3 acknowledgements in one write, limit 2: Flush returns once a
		// sync covers at least one of them.
		f.ack(3)
		if synced, acked := j.acksSynced.Load(), j.acks.Load(); acked-synced > 2 {
			t.Fatalf("round %d: Flush returned with %d of %d acknowledgements unsynced (limit 2)", round, acked-synced, acked)
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
	st, err := j.Storage(sp)
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
