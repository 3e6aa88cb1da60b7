package pqueue

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"
)

// MemoryStore is a Store that keeps entries in memory, by pointer: it needs
// no Codec and loses everything when the process ends. It is the store used
// without JOBDIR.
type MemoryStore struct {
	mu       sync.Mutex
	closed   bool
	nextID   ID
	queues   map[string]*entryHeap
	delayed  delayHeap
	reserved map[ID]*Entry
	waiting  int
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{queues: map[string]*entryHeap{}, reserved: map[ID]*Entry{}}
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
	c := new(Entry)
	*c = *e
	s.waiting++
	if !c.NotBefore.IsZero() {
		heap.Push(&s.delayed, c)
		return nil
	}
	s.queueFor(c.Queue).push(c)
	return nil
}

func (s *MemoryStore) queueFor(name string) *entryHeap {
	q, ok := s.queues[name]
	if !ok {
		q = &entryHeap{}
		s.queues[name] = q
	}
	return q
}

// Head implements Store.
func (s *MemoryStore) Head(ctx context.Context, queue string) (Info, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Info{}, false, ErrClosed
	}
	q, ok := s.queues[queue]
	if !ok || len(*q) == 0 {
		return Info{}, false, nil
	}
	return (*q)[0].Info, true, nil
}

// Reserve implements Store.
func (s *MemoryStore) Reserve(ctx context.Context, queue string) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, ErrClosed
	}
	q, ok := s.queues[queue]
	if !ok || len(*q) == 0 {
		return Entry{}, fmt.Errorf("reserve from %q: %w", queue, ErrEmpty)
	}
	e := heap.Pop(q).(*Entry)
	if len(*q) == 0 {
		delete(s.queues, queue)
	}
	s.reserved[e.ID] = e
	s.waiting--
	return *e, nil
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
	e, ok := s.reserved[id]
	if !ok {
		return fmt.Errorf("nack %d: %w", id, ErrUnknownID)
	}
	delete(s.reserved, id)
	s.queueFor(e.Queue).push(e)
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
		s.queueFor(e.Queue).push(e)
		out = append(out, e.Info)
	}
	return out, nil
}

// Queues implements Store.
func (s *MemoryStore) Queues(ctx context.Context, fn func(queue string) error) error {
	s.mu.Lock()
	names := make([]string, 0, len(s.queues))
	for n, q := range s.queues {
		if len(*q) > 0 {
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
type entryHeap []*Entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if h[i].Priority != h[j].Priority {
		return h[i].Priority > h[j].Priority
	}
	return h[i].ID < h[j].ID
}
func (h entryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)   { *h = append(*h, x.(*Entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return x
}
func (h *entryHeap) push(e *Entry) { heap.Push(h, e) }

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
