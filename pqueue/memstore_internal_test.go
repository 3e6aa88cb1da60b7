package pqueue

import (
	"context"
	"runtime"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// A sub-queue's heap keeps its order while it gives back its array as it
// drains.
func TestEntryHeapShrinksAndKeepsOrder(t *testing.T) {
	var h entryHeap
	const n = 10000
	for i := range n {
		h.push(heapItem{prio: i % 3, id: ID(n - i)})
	}
	peak := cap(h)
	last := heapItem{prio: 1 << 30}
	for i := range n {
		it := h.pop()
		if it.prio > last.prio || (it.prio == last.prio && it.id < last.id) {
			t.Fatalf("pop %d: %+v after %+v: out of order", i, it, last)
		}
		last = it
		if left := len(h); left > 0 && cap(h) >= minShrinkCap && cap(h) > 4*left+1 {
			t.Fatalf("after %d pops: %d entries in an array of %d (peak %d): not shrunk", i+1, left, cap(h), peak)
		}
		if left := len(h); left > 0 && cap(h) < left {
			t.Fatalf("cap %d < len %d", cap(h), left)
		}
	}
	if h != nil {
		t.Errorf("drained heap keeps an array of %d", cap(h))
	}
}

// A memory store that has drained most of a large frontier holds little
// more than what is still queued: popped slots hold no request and the
// sub-queue's array has shrunk.
func TestMemoryStoreReleasesAsItDrains(t *testing.T) {
	const n, keep = 200_000, 100
	ctx := context.Background()
	s := NewMemoryStore()
	scopes := throttling.Scopes{{Name: "h.example"}}
	base := liveHeap()
	for range n {
		r := &spider.Request{Body: make([]byte, 64)} // a request the store alone keeps alive
		if err := s.Push(ctx, &Entry{Info: Info{Queue: "h.example", Scopes: scopes}, Req: r}); err != nil {
			t.Fatal(err)
		}
	}
	full := liveHeap() - base
	for range n - keep {
		e, err := s.Reserve(ctx, "h.example")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(ctx, e.ID); err != nil {
			t.Fatal(err)
		}
	}
	left := liveHeap() - base
	if s.Len() != keep {
		t.Fatalf("Len %d, want %d", s.Len(), keep)
	}
	// 100 of 200,000 entries left: allow 1 % of the full store for them,
	// the maps and the allocator's rounding.
	if left > full/100 {
		t.Errorf("%d of %d entries queued hold %d bytes, %d full: memory not released as the queue drained", keep, n, left, full)
	}
	runtime.KeepAlive(s)
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
