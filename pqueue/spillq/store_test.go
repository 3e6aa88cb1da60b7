package spillq_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/spillq"
	"github.com/gocrawl/gocrawl/pqueue/storetest"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

type testSpider struct{ spider.Base }

func (*testSpider) Name() string { return "test" }
func (*testSpider) Parse(context.Context, *spider.Response, spider.Output) error {
	return nil
}

func newStore(t testing.TB, o spillq.Options) *spillq.Store {
	t.Helper()
	if o.Codec == nil {
		o.Codec = reqcodec.Codec{Spider: &testSpider{}}
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	s, err := spillq.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func TestConformance(t *testing.T) {
	for _, limit := range []int{1, 2, 1000} {
		for _, hb := range []int{1, 32} {
			t.Run(fmt.Sprintf("Limit=%d/HeadBuffer=%d", limit, hb), func(t *testing.T) {
				storetest.Run(t, storetest.Options{
					New: func(t *testing.T) pqueue.Store { return newStore(t, spillq.Options{Limit: limit, HeadBuffer: hb}) },
				})
			})
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []spillq.Options{
		{Limit: 0, Codec: reqcodec.Codec{}},
		{Limit: -1, Codec: reqcodec.Codec{}},
		{Limit: 10},
	} {
		if _, err := spillq.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// closure is a callback the codec cannot name: requests using it must
// stay in memory.
func closure(context.Context, *spider.Response, spider.Output) error { return nil }

// TestMatchesMemoryStore drives the spilling store (with a small limit,
// so that entries move between memory and disk all the time) and the
// memory store with the same random operations, and checks that they
// always agree: same IDs, same heads, same order, same lengths.
func TestMatchesMemoryStore(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(8) {
		limit := 1 + int(seed)*3
		t.Run(fmt.Sprintf("seed=%d/Limit=%d", seed, limit), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 17))
			ss := newStore(t, spillq.Options{Limit: limit, HeadBuffer: 1 + int(seed%3)*4})
			ms := pqueue.NewMemoryStore()
			for _, s := range []pqueue.Store{ss, ms} {
				if err := s.Open(ctx); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			queues := []string{"a", "b", "a\x00b"}
			var reserved []pqueue.ID
			extra := 0 // entries that may stay in memory past the limit: closures, delayed, nacked
			for step := range 3000 {
				switch op := rnd.IntN(100); {
				case op < 48:
					q := queues[rnd.IntN(len(queues))]
					info := pqueue.Info{Queue: q, Priority: rnd.IntN(3) - 1, Scopes: throttling.Scopes{{Name: q, Amount: float64(step)}}}
					if rnd.IntN(15) == 0 {
						info.NotBefore = now.Add(time.Duration(rnd.IntN(10)) * time.Second)
						extra++
					}
					var cb spider.Callback
					if rnd.IntN(12) == 0 {
						cb = closure
						extra++
					}
					r := spider.MustRequest(fmt.Sprintf("http://h.test/%d", step), cb)
					e1 := &pqueue.Entry{Info: info, Req: r}
					e2 := &pqueue.Entry{Info: info, Req: r}
					if err := ss.Push(ctx, e1); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					ms.Push(ctx, e2)
					if e1.ID != e2.ID {
						t.Fatalf("step %d: Push gave ID %d, memory %d", step, e1.ID, e2.ID)
					}
				case op < 78:
					q := queues[rnd.IntN(len(queues))]
					h1, ok1, err := ss.Head(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					h2, ok2, _ := ms.Head(ctx, q)
					if ok1 != ok2 || h1.ID != h2.ID || !slices.Equal(h1.Scopes, h2.Scopes) || h1.Priority != h2.Priority {
						t.Fatalf("step %d: Head(%q) = %+v %v, memory %+v %v", step, q, h1, ok1, h2, ok2)
					}
					if !ok1 {
						continue
					}
					e1, err := ss.Reserve(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					e2, _ := ms.Reserve(ctx, q)
					if e1.ID != e2.ID || e1.Req.URL.String() != e2.Req.URL.String() {
						t.Fatalf("step %d: Reserve = %d %s, memory %d %s", step, e1.ID, e1.Req.URL, e2.ID, e2.Req.URL)
					}
					reserved = append(reserved, e1.ID)
				case op < 93 && len(reserved) > 0:
					i := rnd.IntN(len(reserved))
					id := reserved[i]
					reserved = slices.Delete(reserved, i, i+1)
					f1, f2 := ss.Ack, ms.Ack
					if rnd.IntN(3) == 0 {
						f1, f2 = ss.Nack, ms.Nack
						extra++
					}
					if err := f1(ctx, id); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					f2(ctx, id)
				case op < 99:
					now = now.Add(time.Second)
					p1, err := ss.PromoteDue(ctx, now)
					if err != nil {
						t.Fatal(err)
					}
					p2, _ := ms.PromoteDue(ctx, now)
					if len(p1) != len(p2) {
						t.Fatalf("step %d: promoted %d, memory %d", step, len(p1), len(p2))
					}
				default:
					if err := ss.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if ss.Len() != ms.Len() {
					t.Fatalf("step %d: Len %d, memory %d", step, ss.Len(), ms.Len())
				}
				if n := ss.InMemory(); n > limit+extra {
					t.Fatalf("step %d: %d entries in memory, limit %d", step, n, limit)
				}
			}
			if ss.Spilled() == 0 {
				t.Fatal("nothing spilled: the test does not test spilling")
			}
		})
	}
}

// TestSpillBoundsMemory pushes far more than the limit into one
// sub-queue and drains it: memory never holds more than the limit, the
// order is push order, and Close removes the folder.
func TestSpillBoundsMemory(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	s := newStore(t, spillq.Options{Limit: 10, Dir: parent})
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Dir() != "" {
		t.Fatal("a folder was created before anything spilled")
	}
	const n = 1000
	next := 0
	for i := range n {
		r := spider.MustRequest(fmt.Sprintf("http://h.test/%d", i), nil)
		if err := s.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h"}, Req: r}); err != nil {
			t.Fatal(err)
		}
		if got := s.InMemory(); got > 10 {
			t.Fatalf("%d entries in memory after %d pushes, limit 10", got, i+1)
		}
		if i%3 == 2 { // serve one every third push, as a crawl does
			e, err := s.Reserve(ctx, "h")
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("/%d", next); e.Req.URL.Path != want {
				t.Fatalf("got %s, want %s", e.Req.URL.Path, want)
			}
			next++
			if err := s.Ack(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 == 0 {
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for ; next < n; next++ {
		e, err := s.Reserve(ctx, "h")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("/%d", next); e.Req.URL.Path != want {
			t.Fatalf("got %s, want %s", e.Req.URL.Path, want)
		}
		s.Ack(ctx, e.ID)
	}
	if s.Len() != 0 {
		t.Fatalf("Len = %d after draining", s.Len())
	}
	if s.Spilled() < n-20 {
		t.Fatalf("only %d of %d pushes spilled", s.Spilled(), n)
	}
	dir := s.Dir()
	if fi, err := os.Stat(dir); err != nil || filepath.Dir(dir) != parent || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spill folder %q (in %q): %v, want a private folder", dir, parent, err)
	}
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		if fi, err := f.Info(); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("spill file %s has mode %v, want private", f.Name(), fi.Mode().Perm())
		}
	}
	if len(files) == 0 {
		t.Error("nothing in the spill folder")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spill folder left after Close: %v", err)
	}
	if err := s.Open(ctx); !errors.Is(err, pqueue.ErrClosed) {
		t.Fatalf("Open after Close: %v, want ErrClosed", err)
	}
}

// TestDiskFailureStops checks that a spill that cannot reach the disk is a
// storage error, and that the store refuses to go on rather than losing
// requests.
func TestDiskFailureStops(t *testing.T) {
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "missing")
	s := newStore(t, spillq.Options{Limit: 2, Dir: missing})
	s.Open(ctx)
	push := func(i int) error {
		r := spider.MustRequest(fmt.Sprintf("http://h.test/%d", i), nil)
		return s.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h"}, Req: r})
	}
	for i := range 2 {
		if err := push(i); err != nil {
			t.Fatalf("push %d below the limit: %v", i, err)
		}
	}
	err := push(2)
	if !errors.Is(err, pqueue.ErrStorage) {
		t.Fatalf("spill to a missing folder: %v, want ErrStorage", err)
	}
	if s.Len() != 2 {
		t.Fatalf("Len = %d after a failed push, want 2", s.Len())
	}
	if _, err := s.Reserve(ctx, "h"); !errors.Is(err, pqueue.ErrStorage) {
		t.Fatalf("Reserve after the failure: %v, want ErrStorage", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClosuresStayInMemory checks that requests with a closure callback
// are never refused: they stay in memory, in their place.
func TestClosuresStayInMemory(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, spillq.Options{Limit: 1})
	s.Open(ctx)
	for i := range 6 {
		var cb spider.Callback
		if i%2 == 1 {
			cb = closure
		}
		r := spider.MustRequest(fmt.Sprintf("http://h.test/%d", i), cb)
		if err := s.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h"}, Req: r}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Spilled() != 2 || s.InMemory() != 4 {
		t.Fatalf("spilled %d, in memory %d; want 2 and 4 (the first request and the closures)", s.Spilled(), s.InMemory())
	}
	for i := range 6 {
		e, err := s.Reserve(ctx, "h")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("/%d", i); e.Req.URL.Path != want {
			t.Fatalf("got %s, want %s", e.Req.URL.Path, want)
		}
		if i%2 == 1 && e.Req.Callback == nil {
			t.Fatalf("%s lost its closure", e.Req.URL)
		}
	}
}
