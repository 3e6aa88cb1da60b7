package pebbleq_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
)

func TestSetPersistsWithPushes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	js := openStore(t, dir, 0)
	set := pebbleq.NewSet(js.job.DB(), jobdir.PrefixDupes)
	js.AttachSet(set)
	if err := js.Open(ctx); err != nil {
		t.Fatal(err)
	}
	r1 := spider.MustRequest("http://h.test/1", nil)
	r2 := spider.MustRequest("http://h.test/2", nil)
	for _, r := range []*spider.Request{r1, r2} {
		if seen, err := set.Add(ctx, dupefilter.Of(r)); err != nil || seen {
			t.Fatalf("first Add: %v %v", seen, err)
		}
		if seen, _ := set.Add(ctx, dupefilter.Of(r)); !seen {
			t.Fatal("second Add (pending) not seen")
		}
		if r == r1 {
			if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: r}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// r2's fingerprint is pending: a crash now must not make r2 look seen
	// while r2 was never queued. Simulate by dropping the store without
	// closing the set.
	js.Store.Close(ctx)
	js = js.reopen(t)
	set2 := pebbleq.NewSet(js.job.DB(), jobdir.PrefixDupes)
	if seen, _ := set2.Add(ctx, dupefilter.Of(r1)); !seen {
		t.Error("r1's fingerprint, pushed with r1, was lost")
	}
	if seen, _ := set2.Add(ctx, dupefilter.Of(r2)); seen {
		t.Error("r2's fingerprint became durable without r2")
	}
	if err := set2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pebbleq.NewSet(js.job.DB(), jobdir.PrefixDupes).Len(); n != 2 {
		t.Errorf("Len = %d, want 2 (Close writes what is pending)", n)
	}
}

func TestSetForget(t *testing.T) {
	ctx := context.Background()
	js := openStore(t, t.TempDir(), 0)
	set := pebbleq.NewSet(js.job.DB(), jobdir.PrefixDupes)
	js.AttachSet(set)
	if err := js.Open(ctx); err != nil {
		t.Fatal(err)
	}
	pending := dupefilter.Of(spider.MustRequest("http://h.test/pending", nil))
	written := spider.MustRequest("http://h.test/written", nil)
	for _, fp := range []dupefilter.Fingerprint{pending, dupefilter.Of(written)} {
		if seen, err := set.Add(ctx, fp); err != nil || seen {
			t.Fatalf("first Add: %v %v", seen, err)
		}
	}
	// Pushing writes both pending fingerprints with the request.
	if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: written}); err != nil {
		t.Fatal(err)
	}
	notYet := dupefilter.Of(spider.MustRequest("http://h.test/not-yet", nil))
	if _, err := set.Add(ctx, notYet); err != nil {
		t.Fatal(err)
	}
	for _, fp := range []dupefilter.Fingerprint{pending, notYet} {
		if err := set.Forget(ctx, fp); err != nil {
			t.Fatal(err)
		}
		if seen, _ := set.Add(ctx, fp); seen {
			t.Errorf("fingerprint %s still seen after Forget", fp)
		}
	}
	if seen, _ := set.Add(ctx, dupefilter.Of(written)); !seen {
		t.Error("a fingerprint that was not forgotten is no longer seen")
	}
}

// Len counts each fingerprint once: those stored before the set was made,
// those added and written since, and those added but not yet written,
// whenever Len is first called.
func TestSetLenCountsOnce(t *testing.T) {
	ctx := context.Background()
	js := openStore(t, t.TempDir(), 0)
	set := pebbleq.NewSet(js.job.DB(), jobdir.PrefixDupes)
	js.AttachSet(set)
	if err := js.Open(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r := spider.MustRequest(fmt.Sprintf("http://h.test/%d", i), nil)
		if seen, err := set.Add(ctx, dupefilter.Of(r)); err != nil || seen {
			t.Fatalf("Add %d: %v %v", i, seen, err)
		}
		if i < 3 { // pushed: written with the request; the rest stay pending
			if err := js.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: r}); err != nil {
				t.Fatal(err)
			}
			if err := js.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := set.Len(); n != 5 {
		t.Fatalf("Len = %d after 5 fingerprints (3 written, 2 pending), want 5", n)
	}
	r := spider.MustRequest("http://h.test/new", nil)
	if _, err := set.Add(ctx, dupefilter.Of(r)); err != nil {
		t.Fatal(err)
	}
	if n := set.Len(); n != 6 {
		t.Fatalf("Len = %d after one more, want 6", n)
	}
}
