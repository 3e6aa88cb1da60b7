package pqueue

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// MemoryStore is a Store that keeps entries in memory, by pointer: it needs
// no Codec and loses everything when the process ends. It is the store used
// without JOBDIR.
//
// A queued entry costs about 85 bytes besides the request itself (see
// docs/performance.md): its fields are stored inline in its sub-queue's
// heap, and entries whose scopes equal their sub-queue's share one slice.
// A request of the common kind (a link found on a page: a GET with no
// header, body or meta of its own) is held in a compact form of 96 bytes
// and made again when it is reserved: Reserve returns an equal request,
// not the pointer pushed, as a persistent store does. Start requests
// (Depth 0) are kept by pointer.
type MemoryStore struct {
	mu       sync.Mutex
	closed   bool
	nextID   ID
	queues   map[string]*memQueue
	delayed  delayHeap
	reserved map[ID]reservedItem
	waiting  int
}

// memQueue is one sub-queue.
type memQueue struct {
	h     entryHeap
	canon throttling.Scopes // the scopes most of its entries share
}

type reservedItem struct {
	queue string
	it    heapItem
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{queues: map[string]*memQueue{}, reserved: map[ID]reservedItem{}}
}

// Open implements Store; a memory store has nothing to load.
func (s *MemoryStore) Open(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = false
	return nil
}

// Push implements Store.
func (s *MemoryStore) Push(ctx context.Context, e *Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.nextID++
	e.ID = s.nextID
	s.add(e)
	return nil
}

// Insert adds e with the ID the caller gave it instead of assigning one:
// for a store that keeps part of its entries in a MemoryStore and the rest
// elsewhere under one ID space (pqueue/spillq). e.ID must not be zero and
// must not name an entry the store holds; entries are ordered by it like
// by the IDs Push assigns, and later Pushes hand out larger IDs.
func (s *MemoryStore) Insert(ctx context.Context, e *Entry) error {
	if e.ID == 0 {
		return errors.New("pqueue: MemoryStore.Insert of an entry with ID 0")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.nextID = max(s.nextID, e.ID)
	s.add(e)
	return nil
}

// add stores e, whose ID is set; s.mu is held.
func (s *MemoryStore) add(e *Entry) {
	s.waiting++
	if !e.NotBefore.IsZero() {
		c := new(Entry)
		*c = *e
		heap.Push(&s.delayed, c)
		return
	}
	s.queueFor(e.Queue).push(newHeapItem(e))
}

// newHeapItem is e as a sub-queue holds it: its request in compact form
// when it has one.
func newHeapItem(e *Entry) heapItem {
	it := heapItem{prio: e.Priority, id: e.ID, scopes: e.Scopes}
	if it.small = compact(e.Req); it.small == nil {
		it.req = e.Req
	}
	return it
}

func (s *MemoryStore) queueFor(name string) *memQueue {
	q, ok := s.queues[name]
	if !ok {
		q = &memQueue{}
		s.queues[name] = q
	}
	return q
}

// push adds it, sharing the sub-queue's scopes slice when equal.
func (q *memQueue) push(it heapItem) {
	if q.canon == nil {
		q.canon = it.scopes
	} else if slices.Equal(q.canon, it.scopes) {
		it.scopes = q.canon
	}
	q.h.push(it)
}

func (it heapItem) entry(queue string) Entry {
	req := it.req
	if it.small != nil {
		req = it.small.request()
	}
	return Entry{Info: Info{ID: it.id, Queue: queue, Priority: it.prio, Scopes: it.scopes}, Req: req}
}

// Head implements Store.
func (s *MemoryStore) Head(ctx context.Context, queue string) (Info, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Info{}, false, ErrClosed
	}
	q, ok := s.queues[queue]
	if !ok || len(q.h) == 0 {
		return Info{}, false, nil
	}
	it := q.h[0]
	return Info{ID: it.id, Queue: queue, Priority: it.prio, Scopes: it.scopes}, true, nil
}

// Reserve implements Store.
func (s *MemoryStore) Reserve(ctx context.Context, queue string) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	q, ok := s.queues[queue]
	if !ok || len(q.h) == 0 {
		return Entry{}, fmt.Errorf("reserve from %q: %w", queue, ErrEmpty)
	}
	it := q.h.pop()
	if len(q.h) == 0 {
		delete(s.queues, queue)
	}
	s.reserved[it.id] = reservedItem{queue: queue, it: it}
	s.waiting--
	return it.entry(queue), nil
}

// Ack implements Store.
func (s *MemoryStore) Ack(ctx context.Context, id ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.reserved[id]; !ok {
		return fmt.Errorf("ack %d: %w", id, ErrUnknownID)
	}
	delete(s.reserved, id)
	return nil
}

// Nack implements Store.
func (s *MemoryStore) Nack(ctx context.Context, id ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	r, ok := s.reserved[id]
	if !ok {
		return fmt.Errorf("nack %d: %w", id, ErrUnknownID)
	}
	delete(s.reserved, id)
	s.queueFor(r.queue).push(r.it)
	s.waiting++
	return nil
}

// NextDue implements Store.
func (s *MemoryStore) NextDue(ctx context.Context) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Time{}, false, ErrClosed
	}
	if len(s.delayed) == 0 {
		return time.Time{}, false, nil
	}
	return s.delayed[0].NotBefore, true, nil
}

// PromoteDue implements Store.
func (s *MemoryStore) PromoteDue(ctx context.Context, now time.Time) ([]Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	var out []Info
	for len(s.delayed) > 0 && !s.delayed[0].NotBefore.After(now) {
		e := heap.Pop(&s.delayed).(*Entry)
		e.NotBefore = time.Time{}
		s.queueFor(e.Queue).push(newHeapItem(e))
		out = append(out, e.Info)
	}
	return out, nil
}

// Queues implements Store.
func (s *MemoryStore) Queues(ctx context.Context, fn func(queue string) error) error {
	s.mu.Lock()
	names := make([]string, 0, len(s.queues))
	for n, q := range s.queues {
		if len(q.h) > 0 {
			names = append(names, n)
		}
	}
	s.mu.Unlock()
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// Len implements Store.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// Close implements Store. The entries stay in memory: reopening the same
// MemoryStore finds them, reserved ones still reserved.
func (s *MemoryStore) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// entryHeap orders a sub-queue: higher priority first, then smaller ID.
// Entries are stored inline (no pointer per entry to chase or allocate).
type entryHeap []heapItem

type heapItem struct {
	prio   int
	id     ID
	scopes throttling.Scopes
	// The request: small when it has a compact form, req otherwise.
	req   *spider.Request
	small *compactRequest
}

func (h entryHeap) less(i, j int) bool {
	if h[i].prio != h[j].prio {
		return h[i].prio > h[j].prio
	}
	return h[i].id < h[j].id
}

// push and pop are container/heap's algorithms without its interface,
// which would allocate for every item.
func (h *entryHeap) push(it heapItem) {
	*h = append(*h, it)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2
		if !s.less(j, i) {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

func (h *entryHeap) pop() heapItem {
	s := *h
	n := len(s) - 1
	top := s[0]
	s[0] = s[n]
	s[n] = heapItem{}
	s = s[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && s.less(r, l) {
			j = r
		}
		if !s.less(j, i) {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	switch {
	case n == 0:
		s = nil // let a drained sub-queue's array go
	case cap(s) >= minShrinkCap && n <= cap(s)/4:
		// A draining sub-queue gives back its array as it shrinks: a
		// frontier of a million requests leaves no 48 MB array behind
		// for the rest of the crawl. Halving at a quarter full copies
		// each entry O(1) times, amortized.
		s = append(make(entryHeap, 0, cap(s)/2), s...)
	}
	*h = s
	return top
}

// minShrinkCap is the capacity under which a sub-queue's array is kept as
// it is (a few kilobytes).
const minShrinkCap = 256

// delayHeap orders the delayed set: earlier NotBefore first, then smaller ID.
type delayHeap []*Entry

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	if !h[i].NotBefore.Equal(h[j].NotBefore) {
		return h[i].NotBefore.Before(h[j].NotBefore)
	}
	return h[i].ID < h[j].ID
}
func (h delayHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(x any)   { *h = append(*h, x.(*Entry)) }
func (h *delayHeap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return x
}
