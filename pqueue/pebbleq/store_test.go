package pebbleq_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/pqueue/storetest"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

type testSpider struct{ spider.Base }

func (*testSpider) Name() string { return "test" }
func (*testSpider) Parse(context.Context, *spider.Response, spider.Output) error {
	return nil
}

var _ pqueue.Codec = reqcodec.Codec{}

// jobStore is a store together with the job that owns its database.
type jobStore struct {
	*pebbleq.Store
	job  *jobdir.Job
	dir  string
	opts pebbleq.Options
}

func openStore(t testing.TB, dir string, hb int) *jobStore {
	t.Helper()
	return openStoreWith(t, dir, pebbleq.Options{HeadBuffer: hb})
}

// openStoreWith opens a store with o, its Codec and Prefix filled in.
func openStoreWith(t testing.TB, dir string, o pebbleq.Options) *jobStore {
	t.Helper()
	j, err := jobdir.Open(dir, "test", jobdir.Options{SyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	o.Codec, o.Prefix = reqcodec.Codec{Spider: &testSpider{}}, jobdir.PrefixQueue
	s, err := pebbleq.New(j.DB(), o)
	if err != nil {
		t.Fatal(err)
	}
	js := &jobStore{Store: s, job: j, dir: dir, opts: o}
	t.Cleanup(func() { js.Store.Close(context.Background()); js.job.Close() })
	return js
}

func (js *jobStore) reopen(t testing.TB) *jobStore {
	t.Helper()
	js.Store.Close(context.Background())
	if err := js.job.Close(); err != nil {
		t.Fatal(err)
	}
	return openStoreWith(t, js.dir, pebbleq.Options{GroupWrites: js.opts.GroupWrites})
}

// crash closes the job's database without closing the store, as a
// killed process would leave it: pending grouped writes are lost.
func (js *jobStore) crash(t testing.TB) *jobStore {
	t.Helper()
	if err := js.job.Close(); err != nil {
		t.Fatal(err)
	}
	return openStoreWith(t, js.dir, pebbleq.Options{GroupWrites: js.opts.GroupWrites})
}

func TestConformance(t *testing.T) {
	for _, group := range []bool{false, true} {
		for _, hb := range []int{1, 2, 32} {
			t.Run(fmt.Sprintf("GroupWrites=%v/HeadBuffer=%d", group, hb), func(t *testing.T) {
				storetest.Run(t, storetest.Options{
					New: func(t *testing.T) pqueue.Store {
						return openStoreWith(t, t.TempDir(), pebbleq.Options{HeadBuffer: hb, GroupWrites: group})
					},
					Reopen: func(t *testing.T, old pqueue.Store) pqueue.Store {
						return old.(*jobStore).reopen(t)
					},
				})
			})
		}
	}
}

// TestMatchesMemoryStore drives the Pebble store and the memory store with
// the same random operations (pushes with random priorities into a few
// sub-queues, reserves, acks, nacks, delayed entries, reopens) and checks
// they always agree.
func TestMatchesMemoryStore(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(8) {
		// Odd seeds group writes, flushed at random moments (and with
		// a pending batch small enough to be committed by pushes too).
		group := seed%2 == 1
		t.Run(fmt.Sprintf("%d/GroupWrites=%v", seed, group), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 7))
			dir := t.TempDir()
			ps := openStoreWith(t, dir, pebbleq.Options{HeadBuffer: 1 + int(seed/2)*3, GroupWrites: group, MaxPendingBytes: 2048})
			if err := ps.Open(ctx); err != nil {
				t.Fatal(err)
			}
			ms := pqueue.NewMemoryStore()
			ms.Open(ctx)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			queues := []string{"a", "b", "a\x00b"}
			var reserved []pqueue.ID // Pebble IDs
			// After a reopen the Pebble store skips to a new block of IDs:
			// IDs keep their order but not their values.
			toMem := map[pqueue.ID]pqueue.ID{}
			for step := range 2000 {
				switch op := rnd.IntN(100); {
				case op < 45:
					q := queues[rnd.IntN(len(queues))]
					info := pqueue.Info{Queue: q, Priority: rnd.IntN(5) - 2, Scopes: throttling.Scopes{{Name: q, Amount: float64(step)}}}
					if rnd.IntN(10) == 0 {
						info.NotBefore = now.Add(time.Duration(rnd.IntN(10)) * time.Second)
					}
					r := spider.MustRequest(fmt.Sprintf("http://h.test/%d", step), nil)
					e1 := &pqueue.Entry{Info: info, Req: r}
					e2 := &pqueue.Entry{Info: info, Req: r}
					if err := ps.Push(ctx, e1); err != nil {
						t.Fatal(err)
					}
					ms.Push(ctx, e2)
					if e1.ID == 0 {
						t.Fatalf("step %d: no ID", step)
					}
					toMem[e1.ID] = e2.ID
				case op < 75:
					q := queues[rnd.IntN(len(queues))]
					h1, ok1, err := ps.Head(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					h2, ok2, _ := ms.Head(ctx, q)
					if ok1 != ok2 || toMem[h1.ID] != h2.ID || !slices.Equal(h1.Scopes, h2.Scopes) || h1.Priority != h2.Priority {
						t.Fatalf("step %d: Head(%q) = %+v %v, memory %+v %v", step, q, h1, ok1, h2, ok2)
					}
					if !ok1 {
						continue
					}
					e1, err := ps.Reserve(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					e2, _ := ms.Reserve(ctx, q)
					if toMem[e1.ID] != e2.ID || e1.Req.URL.String() != e2.Req.URL.String() {
						t.Fatalf("step %d: Reserve = %d %s, memory %d %s", step, e1.ID, e1.Req.URL, e2.ID, e2.Req.URL)
					}
					reserved = append(reserved, e1.ID)
				case op < 90 && len(reserved) > 0:
					i := rnd.IntN(len(reserved))
					id := reserved[i]
					reserved = slices.Delete(reserved, i, i+1)
					if rnd.IntN(4) == 0 {
						if err := ps.Nack(ctx, id); err != nil {
							t.Fatal(err)
						}
						ms.Nack(ctx, toMem[id])
					} else {
						if err := ps.Ack(ctx, id); err != nil {
							t.Fatal(err)
						}
						ms.Ack(ctx, toMem[id])
					}
				case op < 99:
					now = now.Add(time.Second)
					p1, err := ps.PromoteDue(ctx, now)
					if err != nil {
						t.Fatal(err)
					}
					p2, _ := ms.PromoteDue(ctx, now)
					if len(p1) != len(p2) {
						t.Fatalf("step %d: promoted %d, memory %d", step, len(p1), len(p2))
					}
					d1, ok1, _ := ps.NextDue(ctx)
					d2, ok2, _ := ms.NextDue(ctx)
					if ok1 != ok2 || !d1.Equal(d2) {
						t.Fatalf("step %d: NextDue %v %v, memory %v %v", step, d1, ok1, d2, ok2)
					}
				default:
					// Reopen: reservations come back in line, as Nack.
					ps = ps.reopen(t)
					if err := ps.Open(ctx); err != nil {
						t.Fatal(err)
					}
					for _, id := range reserved {
						ms.Nack(ctx, toMem[id])
					}
					reserved = nil
				}
				if group && rnd.IntN(8) == 0 {
					if err := ps.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if ps.Len() != ms.Len() {
					t.Fatalf("step %d: Len %d, memory %d", step, ps.Len(), ms.Len())
				}
			}
		})
	}
}

func TestUnpersistableRequestRejected(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir(), 0)
	s.Open(ctx)
	r := spider.MustRequest("http://h.test/x", func(context.Context, *spider.Response, spider.Output) error { return nil })
	err := s.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: r})
	if err == nil {
		t.Fatal("closure callback accepted")
	}
	if s.Len() != 0 {
		t.Fatalf("Len = %d after a rejected push", s.Len())
	}
	ok := spider.MustRequest("http://h.test/y", nil)
	if err := s.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: ok}); err != nil {
		t.Fatalf("the store does not go on after a rejection: %v", err)
	}
}

// TestLargeRecordBufferNotKept: a push builds its record in a buffer the
// store reuses, but one large request (a 1 MB POST body) does not stay in
// memory for the store's life; the request itself is stored whole.
func TestLargeRecordBufferNotKept(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir(), 0)
	if err := s.Open(ctx); err != nil {
		t.Fatal(err)
	}
	big := spider.MustRequest("http://h.test/upload", nil)
	big.Method, big.Body = "POST", bytes.Repeat([]byte("b"), 1<<20)
	small := spider.MustRequest("http://h.test/page", nil)
	for _, r := range []*spider.Request{small, big} {
		if err := s.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test"}, Req: r}); err != nil {
			t.Fatal(err)
		}
	}
	if n := pebbleq.ScratchCap(s.Store); n > 64<<10 {
		t.Errorf("the store keeps a %d-byte record buffer after a 1 MB push", n)
	}
	for _, want := range []*spider.Request{small, big} {
		e, err := s.Reserve(ctx, "h.test")
		if err != nil {
			t.Fatal(err)
		}
		if e.Req.URL.String() != want.URL.String() || !bytes.Equal(e.Req.Body, want.Body) {
			t.Fatalf("reserved %s with a %d-byte body, want %s with %d", e.Req.URL, len(e.Req.Body), want.URL, len(want.Body))
		}
	}
}
