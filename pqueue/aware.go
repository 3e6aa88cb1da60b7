package pqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

func init() {
	Register("ThrottlingAwarePriorityQueue", func(d Deps) (PriorityQueue, error) {
		return NewThrottlingAware(d.Store, d.Gate, d.Log)
	})
}

// ThrottlingAware is the throttling-aware priority queue
// ("ThrottlingAwarePriorityQueue"): Pop only yields a request whose every
// throttling scope can send now, and records the send with the Gate, so a
// request waiting on a throttled scope never holds a concurrency slot and
// never delays requests of other scopes.
//
// Among ready requests it yields the highest priority; ties go to the
// request using the larger share of its scopes' available quota (when the
// Gate is a QuotaSharer), then round-robin across sub-queues (the least
// recently served first), then first in, first out.
//
// Every Push and Pop costs O(log n) in queued requests and scopes: the
// queue keeps an in-memory index of sub-queue heads (requests with the same
// scopes share a sub-queue) and of the scopes that block them, and it
// learns about scope changes from Gate.Watch instead of scanning. See
// docs/architecture.md, "Scheduler", for the data structures.
type ThrottlingAware struct {
	store Store
	gate  Gate
	share QuotaSharer
	log   zerolog.Logger

	mu     sync.Mutex
	closed bool
	groups map[string]*group      // non-empty sub-queues by name
	scopes map[string]*scopeState // scopes with parked groups or holds
	ready  groupHeap              // groups believed ready (checked again when on top)
	timers timerHeap              // scopes blocked by a delay, by when they are ready
	due    time.Time              // earliest NotBefore in the store's delayed set
	hasDue bool
	stamp  uint64 // round-robin clock: incremented on every send
	// reserved maps popped, unacknowledged entries to their sub-queue, for
	// Nack (bounded by the requests in flight).
	reserved map[ID]string

	changed chan struct{} // signalled when a tracked scope changes

	// dirtyMu guards what Watch callbacks touch without q.mu: the names
	// of the scopes in scopes (tracked), and the changes recorded.
	dirtyMu  sync.Mutex
	tracked  map[string]struct{}
	dirty    []string // scopes changed since the last Pop (from Watch)
	dirtySet map[string]struct{}
	spare    []string
}

// NewThrottlingAware returns a throttling-aware queue over store, asking
// gate about scopes. It returns an error when gate is nil.
func NewThrottlingAware(store Store, gate Gate, log zerolog.Logger) (*ThrottlingAware, error) {
	if gate == nil {
		return nil, errors.New("ThrottlingAwarePriorityQueue: needs the throttler (Deps.Gate is nil)")
	}
	if store == nil {
		store = NewMemoryStore()
	}
	q := &ThrottlingAware{store: store, gate: gate, log: log,
		groups: map[string]*group{}, reserved: map[ID]string{}, scopes: map[string]*scopeState{}, tracked: map[string]struct{}{}, dirtySet: map[string]struct{}{},
		changed: make(chan struct{}, 1)}
	q.share, _ = gate.(QuotaSharer)
	gate.Watch(q.markDirty)
	return q, nil
}

// markDirty is the Watch callback: it runs under the throttler's lock, so
// it only records the scope for the next Pop.
func (q *ThrottlingAware) markDirty(scope string) {
	q.dirtyMu.Lock()
	if _, ok := q.dirtySet[scope]; !ok {
		q.dirtySet[scope] = struct{}{}
		q.dirty = append(q.dirty, scope)
	}
	_, tracked := q.tracked[scope]
	q.dirtyMu.Unlock()
	if tracked {
		select {
		case q.changed <- struct{}{}:
		default:
		}
	}
}

// Changed returns a channel that receives a value (coalesced) when a scope
// that blocks queued requests changes state: a request may have become
// ready. Pop again after it. Most such changes also end a download, which
// the engine hears about anyway; this covers the others (a slot freed by
// a download outside the scheduler, a shortened delay, a released hold).
func (q *ThrottlingAware) Changed() <-chan struct{} { return q.changed }

// Open implements PriorityQueue: it opens the store and indexes the head
// of every sub-queue.
func (q *ThrottlingAware) Open(ctx context.Context) error {
	if err := q.store.Open(ctx); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = false
	if err := q.store.Queues(ctx, func(name string) error { return q.refreshGroup(ctx, name) }); err != nil {
		return err
	}
	return q.refreshDue(ctx)
}

// Push implements PriorityQueue. A request without scopes (one a cache
// will answer) is always ready.
func (q *ThrottlingAware) Push(ctx context.Context, now time.Time, req *spider.Request, scopes throttling.Scopes, priority int) (ID, error) {
	nb, err := notBefore(now, req)
	if err != nil {
		return 0, err
	}
	e := &Entry{Info: Info{Queue: scopes.Key(), Priority: priority, Scopes: scopes, NotBefore: nb}, Req: req}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, ErrClosed
	}
	if err := q.store.Push(ctx, e); err != nil {
		return 0, err
	}
	if !nb.IsZero() {
		if !q.hasDue || nb.Before(q.due) {
			q.due, q.hasDue = nb, true
		}
		return e.ID, nil
	}
	g := q.groups[e.Queue]
	if g == nil {
		g = &group{key: e.Queue, head: e.Info}
		q.groups[e.Queue] = g
		q.toReady(g)
		return e.ID, nil
	}
	if e.Priority > g.head.Priority {
		q.setHead(g, e.Info)
	}
	return e.ID, nil
}

// Pop implements PriorityQueue.
func (q *ThrottlingAware) Pop(ctx context.Context, now time.Time) (*Popped, time.Duration, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, 0, ErrClosed
	}
	if q.hasDue && !q.due.After(now) {
		infos, err := q.store.PromoteDue(ctx, now)
		if err != nil {
			return nil, 0, err
		}
		for _, in := range infos {
			if err := q.refreshGroup(ctx, in.Queue); err != nil {
				return nil, 0, err
			}
		}
		if err := q.refreshDue(ctx); err != nil {
			return nil, 0, err
		}
	}
	settled := false
	for range 4 { // bounded: workers may keep reporting changes meanwhile
		q.processDirty(now)
		for len(q.timers) > 0 && !q.timers[0].readyAt.After(now) {
			q.refreshScope(now, q.timers[0])
		}
		p, err := q.popReady(ctx, now)
		if p != nil || err != nil {
			return p, 0, err
		}
		// Holds released while looking (a holder found blocked by a
		// delay) free scopes whose waiters must be offered them now, not
		// at the next unrelated event.
		if settled = q.settle(); settled {
			break
		}
	}
	if !settled {
		// Changes still arriving after the bounded rounds: ask again
		// soon rather than wait for an event that may not come.
		return nil, time.Millisecond, nil
	}
	return nil, q.wake(now), nil
}

// popReady sends and returns the best group of the ready heap that is
// still ready, parking the ones that are not; nil when none is.
func (q *ThrottlingAware) popReady(ctx context.Context, now time.Time) (*Popped, error) {
	for len(q.ready) > 0 {
		g := q.ready[0]
		ok, at, wait := q.evaluate(now, g)
		if !ok {
			q.park(now, g, at, wait, g.wokenBy != nil)
			continue
		}
		e, err := q.store.Reserve(ctx, g.key)
		if err != nil {
			return nil, err
		}
		if e.ID != g.head.ID {
			return nil, fmt.Errorf("pqueue: store returned entry %d from %q, its head was %d (store modified behind the queue?)", e.ID, g.key, g.head.ID)
		}
		q.release(g)
		g.passed = false
		g.wokenBy = nil
		q.reserved[e.ID] = g.key
		q.stamp++
		g.served = q.stamp
		// g is still the top of the ready heap: give it its next head
		// and sift it down once, rather than remove and push it again.
		h, more, err := q.store.Head(ctx, g.key)
		if err != nil {
			// Not sent: the scopes stay free, and the reservation (never
			// acknowledged) comes back when a persistent store reopens.
			return nil, err
		}
		q.gate.Sent(now, e.Scopes)
		if more {
			g.head = h
			g.share = q.shareOf(h)
			q.ready.fix(g)
		} else {
			q.detach(g)
			delete(q.groups, g.key)
		}
		delayTaken(e.Req)
		return &Popped{ID: e.ID, Req: e.Req, Scopes: e.Scopes, Admitted: true, SentAt: now}, nil
	}
	return nil, nil
}

// settle reports whether every change reported so far has been looked
// at, and then drops a pending Changed signal: it was sent for changes
// this Pop has seen (the sends of Pop itself among them), and waking the
// engine for them again would only cost it a turn. A change recorded
// after this check signals again.
func (q *ThrottlingAware) settle() bool {
	q.dirtyMu.Lock()
	defer q.dirtyMu.Unlock()
	if len(q.dirty) > 0 {
		return false
	}
	select {
	case <-q.changed:
	default:
	}
	return true
}

// wake says when asking again is useful: the earliest time a delay-blocked
// scope or a delayed request becomes ready, or 0 for "when a slot frees".
func (q *ThrottlingAware) wake(now time.Time) time.Duration {
	var at time.Time
	if len(q.timers) > 0 {
		at = q.timers[0].readyAt
	}
	if q.hasDue && (at.IsZero() || q.due.Before(at)) {
		at = q.due
	}
	if at.IsZero() {
		return 0
	}
	return max(at.Sub(now), time.Nanosecond)
}

// processDirty re-evaluates the scopes the throttler reported as changed.
func (q *ThrottlingAware) processDirty(now time.Time) {
	q.dirtyMu.Lock()
	names := q.dirty
	q.dirty = q.spare[:0]
	if len(names) > 1024 {
		// After a burst (many backoffs at once) start a small set again:
		// a map keeps its largest size, and clearing or probing a large,
		// mostly empty map costs more than the few names it holds.
		q.dirtySet = map[string]struct{}{}
	} else {
		for _, n := range names {
			delete(q.dirtySet, n)
		}
	}
	q.dirtyMu.Unlock()
	for _, n := range names {
		if st := q.scopes[n]; st != nil {
			q.refreshScope(now, st)
		}
	}
	q.spare = names[:0]
}

// refreshGroup reads the head of sub-queue name from the store and
// re-indexes it: a new or changed head goes to the ready heap to be
// checked on the next Pop; an empty sub-queue is forgotten.
func (q *ThrottlingAware) refreshGroup(ctx context.Context, name string) error {
	h, ok, err := q.store.Head(ctx, name)
	if err != nil {
		return err
	}
	g := q.groups[name]
	if !ok {
		if g != nil {
			if at := q.detach(g); at != nil {
				q.forget(at)
			}
			q.release(g)
			delete(q.groups, name)
		}
		return nil
	}
	if g == nil {
		g = &group{key: name}
		q.groups[name] = g
	}
	g.head = h
	if g.where != parked {
		q.toReady(g)
	} else {
		g.at.waiting.fix(g)
	}
	return nil
}

func (q *ThrottlingAware) refreshDue(ctx context.Context) error {
	due, ok, err := q.store.NextDue(ctx)
	if err != nil {
		return err
	}
	q.due, q.hasDue = due, ok
	return nil
}

// Ack implements PriorityQueue.
func (q *ThrottlingAware) Ack(ctx context.Context, id ID) error {
	q.mu.Lock()
	delete(q.reserved, id)
	q.mu.Unlock()
	return q.store.Ack(ctx, id)
}

// Nack implements PriorityQueue: the request goes back to its sub-queue.
func (q *ThrottlingAware) Nack(ctx context.Context, id ID) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.store.Nack(ctx, id); err != nil {
		return err
	}
	name, ok := q.reserved[id]
	if !ok {
		return nil
	}
	delete(q.reserved, id)
	return q.refreshGroup(ctx, name)
}

// Len implements PriorityQueue.
func (q *ThrottlingAware) Len() int { return q.store.Len() }

// Close implements PriorityQueue.
func (q *ThrottlingAware) Close(ctx context.Context) error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	return q.store.Close(ctx)
}
