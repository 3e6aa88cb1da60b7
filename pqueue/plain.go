package pqueue

import (
	"context"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

func init() {
	Register("PriorityQueue", func(d Deps) (PriorityQueue, error) { return NewPlain(d.Store), nil })
}

// Plain is the plain priority queue ("PriorityQueue"): requests come out by
// priority, first in first out among equals, whatever the state of their
// throttling scopes. Popped requests are not admitted, so the engine waits
// for their scopes while holding a concurrency slot (the engine-gated
// mode of Scrapy's throttling design, PR #6931). Requests with a
// throttling_delay meta still wait in the store's delayed set, not in a
// slot.
type Plain struct {
	mu    sync.Mutex
	store Store
}

// NewPlain returns a plain priority queue over store.
func NewPlain(store Store) *Plain { return &Plain{store: store} }

// Open implements PriorityQueue.
func (p *Plain) Open(ctx context.Context) error { return p.store.Open(ctx) }

// Push implements PriorityQueue.
func (p *Plain) Push(ctx context.Context, now time.Time, req *spider.Request, scopes throttling.Scopes, priority int) (ID, error) {
	e := &Entry{Info: Info{Priority: priority, Scopes: scopes}, Req: req}
	nb, err := notBefore(now, req)
	if err != nil {
		return 0, err
	}
	e.NotBefore = nb
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.store.Push(ctx, e); err != nil {
		return 0, err
	}
	return e.ID, nil
}

// Pop implements PriorityQueue.
func (p *Plain) Pop(ctx context.Context, now time.Time) (*Popped, time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.store.PromoteDue(ctx, now); err != nil {
		return nil, 0, err
	}
	if _, ok, err := p.store.Head(ctx, ""); err != nil || !ok {
		if err != nil {
			return nil, 0, err
		}
		due, ok, err := p.store.NextDue(ctx)
		if err != nil || !ok {
			return nil, 0, err
		}
		return nil, max(due.Sub(now), time.Nanosecond), nil
	}
	e, err := p.store.Reserve(ctx, "")
	if err != nil {
		return nil, 0, err
	}
	delayTaken(e.Req)
	return &Popped{ID: e.ID, Req: e.Req, Scopes: e.Scopes}, 0, nil
}

// Ack implements PriorityQueue.
func (p *Plain) Ack(ctx context.Context, id ID) error { return p.store.Ack(ctx, id) }

// Nack implements PriorityQueue.
func (p *Plain) Nack(ctx context.Context, id ID) error { return p.store.Nack(ctx, id) }

// Len implements PriorityQueue.
func (p *Plain) Len() int { return p.store.Len() }

// Close implements PriorityQueue.
func (p *Plain) Close(ctx context.Context) error { return p.store.Close(ctx) }
