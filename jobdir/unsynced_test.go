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
	j := mustOpen(t, filepath.Join(t.TempDir(), "job"), "books", Options{SyncInterval: -1})
	j.LimitUnsynced(2)
	sp := &testSpider{}
	st, err := j.Storage(sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := st.Queue.(*pebbleq.Store)
	if err := q.Open(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		e := &pqueue.Entry{Info: pqueue.Info{Queue: "a"}, Req: spider.MustRequest(fmt.Sprintf("http://a.test/%d", i), sp.Parse)}
		if err := q.Push(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	syncs := func() uint64 {
		m, _, err := j.LastSync()
		if err != nil {
			t.Fatal(err)
		}
		return m.Count
	}
	before := syncs()
	ack := func(n int) {
		for range n {
			e, err := q.Reserve(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Ack(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
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
	j := mustOpen(t, filepath.Join(t.TempDir(), "job"), "books", Options{SyncInterval: time.Hour, SyncDelay: 10 * time.Second, Clock: clk})
	j.LimitUnsynced(10)
	sp := &testSpider{}
	st, err := j.Storage(sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := st.Queue.(*pebbleq.Store)
	if err := q.Open(ctx); err != nil {
		t.Fatal(err)
	}
	syncs := func() uint64 {
		m, _, err := j.LastSync()
		if err != nil {
			t.Fatal(err)
		}
		return m.Count
	}
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

	for i := range 20 {
		e := &pqueue.Entry{Info: pqueue.Info{Queue: "a"}, Req: spider.MustRequest(fmt.Sprintf("http://a.test/%d", i), sp.Parse)}
		if err := q.Push(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor("the delay timer", func() bool { return clk.Pending() == 2 })
	if got := syncs(); got != before {
		t.Fatalf("a write was synced %d times before SyncDelay passed", got-before)
	}
	clk.Advance(10 * time.Second)
	waitFor("the sync after the delay", func() bool { return syncs() == before+1 })

	ack := func(n int) {
		t.Helper()
		for range n {
			e, err := q.Reserve(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Ack(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
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
	j := mustOpen(t, filepath.Join(t.TempDir(), "job"), "books", Options{SyncInterval: time.Hour, Clock: clk})
	j.LimitUnsynced(2)
	sp := &testSpider{}
	st, err := j.Storage(sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := st.Queue.(*pebbleq.Store)
	if err := q.Open(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		e := &pqueue.Entry{Info: pqueue.Info{Queue: "a"}, Req: spider.MustRequest(fmt.Sprintf("http://a.test/%d", i), sp.Parse)}
		if err := q.Push(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 3; round++ {
		for range 3 {
			e, err := q.Reserve(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Ack(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
		// 3 acknowledgements in one write, limit 2: Flush returns once a
		// sync covers at least one of them.
		if err := q.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if synced, acked := j.acksSynced.Load(), j.acks.Load(); acked-synced > 2 {
			t.Fatalf("round %d: Flush returned with %d of %d acknowledgements unsynced (limit 2)", round, acked-synced, acked)
		}
	}
}
