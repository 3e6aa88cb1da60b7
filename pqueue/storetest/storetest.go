// Package storetest checks that a pqueue.Store behaves as the interface
// documents. Every Store implementation (MemoryStore, pebbleq, and any
// other backend) runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Options{
//			New:    func(t *testing.T) pqueue.Store { return openAt(t, t.TempDir()) },
//			Reopen: func(t *testing.T, old pqueue.Store) pqueue.Store { ... },
//		})
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Options describe the store under test.
type Options struct {
	// New returns an empty, not yet opened store.
	New func(t *testing.T) pqueue.Store
	// Reopen closes old and returns a store opened on the same persisted
	// state, not yet opened. Nil for stores that do not persist (the
	// persistence tests are then skipped).
	Reopen func(t *testing.T, old pqueue.Store) pqueue.Store
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func req(t *testing.T, i int) *spider.Request {
	t.Helper()
	return spider.MustRequest(fmt.Sprintf("https://example.com/%d", i), nil)
}

func open(t *testing.T, s pqueue.Store) pqueue.Store {
	t.Helper()
	if err := s.Open(context.Background()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func push(t *testing.T, s pqueue.Store, queue string, prio int, i int, notBefore time.Time) pqueue.ID {
	t.Helper()
	e := &pqueue.Entry{Info: pqueue.Info{Queue: queue, Priority: prio, NotBefore: notBefore,
		Scopes: throttling.Scopes{{Name: "example.com", Amount: float64(i)}}}, Req: req(t, i)}
	if err := s.Push(context.Background(), e); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if e.ID == 0 {
		t.Fatalf("Push left ID 0")
	}
	return e.ID
}

func reserve(t *testing.T, s pqueue.Store, queue string) pqueue.Entry {
	t.Helper()
	e, err := s.Reserve(context.Background(), queue)
	if err != nil {
		t.Fatalf("Reserve(%q): %v", queue, err)
	}
	return e
}

// Run runs every conformance test on the store.
func Run(t *testing.T, o Options) {
	ctx := context.Background()
	t.Run("Ordering", func(t *testing.T) {
		s := open(t, o.New(t))
		defer s.Close(ctx)
		prios := []int{0, 5, 0, -3, 5, 0}
		for i, p := range prios {
			push(t, s, "q", p, i, time.Time{})
		}
		if s.Len() != len(prios) {
			t.Fatalf("Len = %d, want %d", s.Len(), len(prios))
		}
		var got []string
		for range prios {
			h, ok, err := s.Head(ctx, "q")
			if err != nil || !ok {
				t.Fatalf("Head: %v %v", ok, err)
			}
			e := reserve(t, s, "q")
			if e.ID != h.ID {
				t.Fatalf("Reserve returned ID %d, Head said %d", e.ID, h.ID)
			}
			got = append(got, e.Req.URL.Path)
			if e.Scopes[0].Amount != float64(mustIndex(t, e.Req.URL.Path)) {
				t.Fatalf("scopes not kept: %v for %s", e.Scopes, e.Req.URL)
			}
		}
		want := []string{"/1", "/4", "/0", "/2", "/5", "/3"}
		if !slices.Equal(got, want) {
			t.Fatalf("order = %v, want %v (priority desc, then push order)", got, want)
		}
		if _, ok, _ := s.Head(ctx, "q"); ok {
			t.Fatal("Head of an emptied queue reports an entry")
		}
		if _, err := s.Reserve(ctx, "q"); !errors.Is(err, pqueue.ErrEmpty) {
			t.Fatalf("Reserve on empty: %v, want ErrEmpty", err)
		}
	})
	t.Run("QueuesAreSeparate", func(t *testing.T) {
		s := open(t, o.New(t))
		defer s.Close(ctx)
		push(t, s, "a", 0, 1, time.Time{})
		push(t, s, "b", 9, 2, time.Time{})
		push(t, s, "a\x00b", 0, 3, time.Time{})
		var names []string
		if err := s.Queues(ctx, func(q string) error { names = append(names, q); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"a", "a\x00b", "b"}) {
			t.Fatalf("Queues = %q", names)
		}
		if e := reserve(t, s, "a"); e.Req.URL.Path != "/1" || e.Queue != "a" {
			t.Fatalf("Reserve(a) = %s in %q", e.Req.URL, e.Queue)
		}
		if _, ok, _ := s.Head(ctx, "a"); ok {
			t.Fatal("queue a should be empty")
		}
	})
	t.Run("AckNack", func(t *testing.T) {
		s := open(t, o.New(t))
		defer s.Close(ctx)
		id1 := push(t, s, "q", 0, 1, time.Time{})
		push(t, s, "q", 0, 2, time.Time{})
		e := reserve(t, s, "q")
		if e.ID != id1 || s.Len() != 1 {
			t.Fatalf("reserved %d (want %d), Len %d (want 1)", e.ID, id1, s.Len())
		}
		if err := s.Nack(ctx, e.ID); err != nil {
			t.Fatal(err)
		}
		if s.Len() != 2 {
			t.Fatalf("Len after Nack = %d, want 2", s.Len())
		}
		if e2 := reserve(t, s, "q"); e2.ID != id1 {
			t.Fatalf("Nack lost the entry's place: got %d, want %d", e2.ID, id1)
		}
		if err := s.Ack(ctx, id1); err != nil {
			t.Fatal(err)
		}
		for _, f := range []func(context.Context, pqueue.ID) error{s.Ack, s.Nack} {
			if err := f(ctx, id1); !errors.Is(err, pqueue.ErrUnknownID) {
				t.Fatalf("second Ack/Nack: %v, want ErrUnknownID", err)
			}
		}
		if err := s.Ack(ctx, 999999); !errors.Is(err, pqueue.ErrUnknownID) {
			t.Fatalf("Ack of unknown ID: %v, want ErrUnknownID", err)
		}
	})
	t.Run("Delayed", func(t *testing.T) {
		s := open(t, o.New(t))
		defer s.Close(ctx)
		push(t, s, "q", 0, 1, t0.Add(2*time.Second))
		push(t, s, "q", 0, 2, t0.Add(time.Second))
		push(t, s, "q", 0, 3, time.Time{})
		if s.Len() != 3 {
			t.Fatalf("Len = %d, want 3 (delayed entries count)", s.Len())
		}
		due, ok, err := s.NextDue(ctx)
		if err != nil || !ok || !due.Equal(t0.Add(time.Second)) {
			t.Fatalf("NextDue = %v %v %v", due, ok, err)
		}
		if e := reserve(t, s, "q"); e.Req.URL.Path != "/3" {
			t.Fatalf("a delayed entry competed early: %s", e.Req.URL)
		}
		got, err := s.PromoteDue(ctx, t0.Add(time.Second))
		if err != nil || len(got) != 1 || !got[0].NotBefore.IsZero() {
			t.Fatalf("PromoteDue = %+v, %v", got, err)
		}
		if h, ok, _ := s.Head(ctx, "q"); !ok || h.ID != got[0].ID {
			t.Fatalf("promoted entry not at head: %+v %v", h, ok)
		}
		got, _ = s.PromoteDue(ctx, t0.Add(time.Hour))
		if len(got) != 1 {
			t.Fatalf("second PromoteDue = %+v", got)
		}
		if _, ok, _ := s.NextDue(ctx); ok {
			t.Fatal("NextDue after promoting everything")
		}
	})
	t.Run("Persistence", func(t *testing.T) {
		if o.Reopen == nil {
			t.Skip("store does not persist")
		}
		s := open(t, o.New(t))
		id1 := push(t, s, "a", 0, 1, time.Time{})
		push(t, s, "a", 0, 2, time.Time{})
		push(t, s, "b", 0, 3, t0)
		acked := reserve(t, s, "a")
		if err := s.Ack(ctx, acked.ID); err != nil {
			t.Fatal(err)
		}
		inflight := reserve(t, s, "a") // never acked: must come back
		s = open(t, o.Reopen(t, s))
		defer s.Close(ctx)
		if s.Len() != 2 {
			t.Fatalf("Len after reopen = %d, want 2 (the unacked reservation and the delayed entry)", s.Len())
		}
		e := reserve(t, s, "a")
		if e.ID != inflight.ID || e.Req.URL.String() != inflight.Req.URL.String() {
			t.Fatalf("after reopen got %d %s, want the unacked %d %s", e.ID, e.Req.URL, inflight.ID, inflight.Req.URL)
		}
		if e.ID == id1 {
			t.Fatal("an acked entry came back")
		}
		if due, ok, _ := s.NextDue(ctx); !ok || !due.Equal(t0) {
			t.Fatalf("delayed entry lost: %v %v", due, ok)
		}
		id := push(t, s, "c", 0, 4, time.Time{})
		if id <= inflight.ID {
			t.Fatalf("ID %d reused or not increasing after reopen (had %d)", id, inflight.ID)
		}
	})
}

func mustIndex(t *testing.T, path string) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(path, "/%d", &i); err != nil {
		t.Fatalf("path %q: %v", path, err)
	}
	return i
}
