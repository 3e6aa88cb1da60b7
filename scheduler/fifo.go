package scheduler

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

func init() {
	Register("Scheduler", newGated)
	// Until the throttling-aware scheduler lands, the default name maps to
	// the engine-gated scheduler.
	Register("ThrottlingAwareScheduler", newGated)
}

// gated is the engine-gated scheduler: requests come out in priority order
// (FIFO among equals) whatever the state of their scopes; the engine then
// waits on the scopes while holding a slot.
type gated struct {
	d    Deps
	mu   sync.Mutex
	q    jobHeap
	seq  uint64
	seen map[string]struct{}
}

func newGated(d Deps) (Scheduler, error) {
	return &gated{d: d, seen: map[string]struct{}{}}, nil
}

func (g *gated) Open(ctx context.Context) error { return nil }

func (g *gated) Enqueue(ctx context.Context, req *spider.Request) (bool, error) {
	scopes, err := g.d.Gate.Scopes(ctx, req)
	if err != nil {
		return false, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !req.DontFilter {
		key := req.GetMethod() + " " + req.URL.String()
		if _, dup := g.seen[key]; dup {
			g.d.Stats.Inc("dupefilter/filtered", 1)
			return false, nil
		}
		g.seen[key] = struct{}{}
	}
	g.seq++
	heap.Push(&g.q, &Job{Req: req, Scopes: scopes, ID: g.seq})
	g.d.Stats.Inc("scheduler/enqueued", 1)
	return true, nil
}

func (g *gated) Next(ctx context.Context, now time.Time) (*Job, time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.q) == 0 {
		return nil, 0, nil
	}
	j := heap.Pop(&g.q).(*Job)
	g.d.Stats.Inc("scheduler/dequeued", 1)
	return j, 0, nil
}

func (g *gated) Done(ctx context.Context, job *Job) error { return nil }

func (g *gated) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.q)
}

func (g *gated) Close(ctx context.Context) error { return nil }

type jobHeap []*Job

func (h jobHeap) Len() int { return len(h) }
func (h jobHeap) Less(i, j int) bool {
	if h[i].Req.Priority != h[j].Req.Priority {
		return h[i].Req.Priority > h[j].Req.Priority
	}
	return h[i].ID < h[j].ID
}
func (h jobHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)   { *h = append(*h, x.(*Job)) }
func (h *jobHeap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return x
}
