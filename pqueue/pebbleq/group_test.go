package pebbleq_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
)

// page is what one turn of the engine's loop records for a page: the
// requests its callback produced (each admitted by the dupefilter), then
// its acknowledgement.
func page(t *testing.T, js *jobStore, set *pebbleq.Set, parent pqueue.ID, children ...string) {
	t.Helper()
	ctx := context.Background()
	for _, u := range children {
		r := spider.MustRequest(u, nil)
		if seen, err := set.Add(ctx, dupefilter.Of(r)); err != nil || seen {
			t.Fatalf("Add(%s) = %v, %v", u, seen, err)
		}
		if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := js.Ack(ctx, parent); err != nil {
		t.Fatal(err)
	}
}

func groupedStore(t *testing.T, dir string) (*jobStore, *pebbleq.Set) {
	t.Helper()
	js := openStoreWith(t, dir, pebbleq.Options{GroupWrites: true})
	set := pebbleq.NewSet(js.job.DB(), jobdir.PrefixDupes)
	js.AttachSet(set)
	if err := js.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return js, set
}

func urls(t *testing.T, js *jobStore) map[string]bool {
	t.Helper()
	ctx := context.Background()
	out := map[string]bool{}
	for js.Len() > 0 {
		e, err := js.Reserve(ctx, "h.test")
		if err != nil {
			t.Fatal(err)
		}
		out[e.Req.URL.String()] = true
	}
	return out
}

// TestGroupedWritesCrash checks what a crash leaves of grouped writes:
// everything flushed, nothing of what was not, and so never a page's
// acknowledgement without the requests it produced, nor a fingerprint
// without its request.
func TestGroupedWritesCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	js, set := groupedStore(t, dir)
	root := spider.MustRequest("http://h.test/", nil)
	set.Add(ctx, dupefilter.Of(root))
	if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: root}); err != nil {
		t.Fatal(err)
	}
	if js.Pending() == 0 {
		t.Fatal("a grouped push was committed at once")
	}
	if err := js.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if js.Pending() != 0 {
		t.Fatalf("Pending = %d after Flush", js.Pending())
	}
	e, err := js.Reserve(ctx, "h.test")
	if err != nil {
		t.Fatal(err)
	}
	page(t, js, set, e.ID, "http://h.test/a", "http://h.test/b")
	// Until the flush, the turn's writes are only in memory.
	js, set = crashGrouped(t, js)
	if got := urls(t, js); len(got) != 1 || !got["http://h.test/"] {
		t.Fatalf("after a crash before the flush the queue holds %v, want only the root (not acknowledged)", got)
	}
	for _, u := range []string{"http://h.test/a", "http://h.test/b"} {
		if seen, _ := set.Add(ctx, dupefilter.Of(spider.MustRequest(u, nil))); seen {
			t.Errorf("%s's fingerprint survived the crash without its request", u)
		}
	}

	// The same turn, flushed this time.
	js, set = crashGrouped(t, js)
	e, err = js.Reserve(ctx, "h.test")
	if err != nil {
		t.Fatal(err)
	}
	page(t, js, set, e.ID, "http://h.test/a", "http://h.test/b")
	if err := js.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	js, set = crashGrouped(t, js)
	if got := urls(t, js); len(got) != 2 || !got["http://h.test/a"] || !got["http://h.test/b"] {
		t.Fatalf("after a flushed turn the queue holds %v, want a and b", got)
	}
	for _, u := range []string{"http://h.test/", "http://h.test/a"} {
		if seen, _ := set.Add(ctx, dupefilter.Of(spider.MustRequest(u, nil))); !seen {
			t.Errorf("%s's fingerprint was lost", u)
		}
	}
}

func crashGrouped(t *testing.T, js *jobStore) (*jobStore, *pebbleq.Set) {
	t.Helper()
	js = js.crash(t)
	set := pebbleq.NewSet(js.job.DB(), jobdir.PrefixDupes)
	js.AttachSet(set)
	if err := js.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return js, set
}

// TestGroupedWritesReadTheirOwn checks that what waits in the pending
// batch is found by everything that reads the disk: refills of a
// sub-queue, Nack, and a Close that commits it.
func TestGroupedWritesReadTheirOwn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	js := openStoreWith(t, dir, pebbleq.Options{GroupWrites: true, HeadBuffer: 1})
	if err := js.Open(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://h.test/1", "http://h.test/2", "http://h.test/3"} {
		if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: spider.MustRequest(u, nil)}); err != nil {
			t.Fatal(err)
		}
	}
	// Read ahead one entry at a time: the second and third come from disk.
	e1, err := js.Reserve(ctx, "h.test")
	if err != nil {
		t.Fatal(err)
	}
	e2, err := js.Reserve(ctx, "h.test")
	if err != nil {
		t.Fatal(err)
	}
	if e1.Req.URL.Path != "/1" || e2.Req.URL.Path != "/2" {
		t.Fatalf("reserved %s then %s", e1.Req.URL, e2.Req.URL)
	}
	if err := js.Ack(ctx, e1.ID); err != nil {
		t.Fatal(err)
	}
	if err := js.Nack(ctx, e2.ID); err != nil {
		t.Fatal(err)
	}
	// Close commits the pending acknowledgement.
	js = js.reopen(t)
	if err := js.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if got := urls(t, js); len(got) != 2 || got["http://h.test/1"] {
		t.Fatalf("after Close and reopen the queue holds %v, want 2 and 3", got)
	}
}

// TestGroupedFingerprintForget checks that forgetting a fingerprint still
// in the pending batch deletes it for good (the write is committed
// first, then deleted).
func TestGroupedFingerprintForget(t *testing.T) {
	ctx := context.Background()
	js, set := groupedStore(t, t.TempDir())
	r := spider.MustRequest("http://h.test/r", nil)
	fp := dupefilter.Of(spider.MustRequest("http://h.test/rejected", nil))
	set.Add(ctx, dupefilter.Of(r))
	set.Add(ctx, fp)
	// The push writes both fingerprints to the pending batch.
	if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: r}); err != nil {
		t.Fatal(err)
	}
	if err := set.Forget(ctx, fp); err != nil {
		t.Fatal(err)
	}
	if seen, _ := set.Add(ctx, fp); seen {
		t.Fatal("forgotten fingerprint still seen")
	}
	set.Forget(ctx, fp) // the Add above recorded it again
	js, set = crashGrouped(t, js)
	if seen, _ := set.Add(ctx, fp); seen {
		t.Error("forgotten fingerprint came back from disk")
	}
	if seen, _ := set.Add(ctx, dupefilter.Of(r)); !seen {
		t.Error("the pushed request's fingerprint was lost")
	}
}

// TestGroupedFlushFailure checks that a flush whose acknowledgement
// companions fail (a feed that cannot be written) commits nothing, now or
// later, and that the store refuses further writes.
func TestGroupedFlushFailure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	feedErr := errors.New("feed: disk full")
	fail := false
	js := openStoreWith(t, dir, pebbleq.Options{GroupWrites: true, OnAck: func(*pebble.Batch) error {
		if fail {
			return feedErr
		}
		return nil
	}})
	if err := js.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: spider.MustRequest("http://h.test/1", nil)}); err != nil {
		t.Fatal(err)
	}
	if err := js.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := js.Reserve(ctx, "h.test")
	if err != nil {
		t.Fatal(err)
	}
	if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: spider.MustRequest("http://h.test/2", nil)}); err != nil {
		t.Fatal(err)
	}
	if err := js.Ack(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	fail = true
	err = js.Flush(ctx)
	if !errors.Is(err, pqueue.ErrStorage) || !errors.Is(err, feedErr) {
		t.Fatalf("Flush = %v, want ErrStorage wrapping the feed's error", err)
	}
	if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: spider.MustRequest("http://h.test/3", nil)}); !errors.Is(err, pqueue.ErrStorage) {
		t.Fatalf("Push after a failed flush = %v, want ErrStorage", err)
	}
	fail = false
	js = js.reopen(t) // Close must not commit the failed batch
	if err := js.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if got := urls(t, js); len(got) != 1 || !got["http://h.test/1"] {
		t.Fatalf("after the failed flush the queue holds %v, want only 1 (not acknowledged)", got)
	}
}
