package jobdir

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

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
