package pqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// delayCases are requests as they reach a queue, with the time (after the
// push) they become ready: one rule for the throttling_delay mark at every
// gate (throttling.PendingRequestDelay).
var delayCases = []struct {
	name string
	req  func() *spider.Request
	want time.Duration
}{
	{"no delay", func() *spider.Request { return spider.MustRequest("https://example.com/", nil) }, 0},
	{"delay not taken yet", func() *spider.Request {
		return spider.MustRequest("https://example.com/", nil).Set(throttling.MetaDelay, 100.0)
	}, 100 * time.Second},
	{"delay taken at the engine gate", func() *spider.Request {
		r := spider.MustRequest("https://example.com/", nil).Set(throttling.MetaDelay, 100.0)
		throttling.TakeRequestDelay(r)
		return r
	}, 0},
	{"copy of a request whose delay was taken", func() *spider.Request {
		r := spider.MustRequest("https://example.com/", nil).Set(throttling.MetaDelay, 100.0)
		throttling.TakeRequestDelay(r)
		c := r.Clone()
		c.DontFilter = true
		return c
	}, 0},
	{"copy given a new delay", func() *spider.Request {
		r := spider.MustRequest("https://example.com/", nil).Set(throttling.MetaDelay, 100.0)
		throttling.TakeRequestDelay(r)
		c := r.Clone()
		throttling.SetRequestDelay(c, 3*time.Second)
		return c
	}, 3 * time.Second},
}

// Every queue of the package, memory-backed: a request is ready after the
// delay it still has to wait, comes out marked, and the engine's gate
// (TakeRequestDelay) then holds it no longer.
func TestQueuesHonourTheDelayMark(t *testing.T) {
	queues := map[string]func(t *testing.T) pqueue.PriorityQueue{
		"ThrottlingAware": func(t *testing.T) pqueue.PriorityQueue { return newAware(t, newFakeGate()) },
		"Plain": func(t *testing.T) pqueue.PriorityQueue {
			q := pqueue.NewPlain(pqueue.NewMemoryStore())
			if err := q.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			return q
		},
	}
	for qname, newQ := range queues {
		for _, tt := range delayCases {
			t.Run(qname+"/"+tt.name, func(t *testing.T) {
				ctx := context.Background()
				q := newQ(t)
				if _, err := q.Push(ctx, t0, tt.req(), sc("a"), 0); err != nil {
					t.Fatal(err)
				}
				p, wake, err := q.Pop(ctx, t0)
				if err != nil {
					t.Fatal(err)
				}
				if tt.want == 0 {
					if p == nil {
						t.Fatalf("not ready at once (wake %v)", wake)
					}
				} else {
					if p != nil || wake != tt.want {
						t.Fatalf("popped %v, wake %v; want nothing for %v", p != nil, wake, tt.want)
					}
					if p, _, err = q.Pop(ctx, t0.Add(tt.want)); err != nil || p == nil {
						t.Fatalf("not ready after its delay: %v %v", p, err)
					}
				}
				if d := throttling.TakeRequestDelay(p.Req); d != 0 {
					t.Fatalf("the engine gate would wait %v more for a popped request", d)
				}
				if p.Req.Get(throttling.MetaDelay) != nil && !throttling.DelayTaken(p.Req) {
					t.Fatal("popped request not marked: a copy of it would wait again")
				}
			})
		}
	}
}
