package pqueue

import "container/heap"

// groupHeap orders sub-queues for serving: groups holding scopes against
// starvation first, then higher head priority, then larger quota share,
// then least recently served (round-robin), then older head (FIFO).
// Each group records its index, so removal and re-ordering are O(log n).
type groupHeap []*group

func (h groupHeap) Len() int { return len(h) }
func (h groupHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if ha, hb := a.holder(), b.holder(); ha != hb {
		return ha
	}
	if a.head.Priority != b.head.Priority {
		return a.head.Priority > b.head.Priority
	}
	if a.share != b.share {
		return a.share > b.share
	}
	if a.served != b.served {
		return a.served < b.served
	}
	return a.head.ID < b.head.ID
}
func (h groupHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}
func (h *groupHeap) Push(x any) {
	g := x.(*group)
	g.idx = len(*h)
	*h = append(*h, g)
}
func (h *groupHeap) Pop() any {
	old := *h
	n := len(old)
	g := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	g.idx = -1
	return g
}
func (h *groupHeap) push(g *group)   { heap.Push(h, g) }
func (h *groupHeap) remove(g *group) { heap.Remove(h, g.idx) }
func (h *groupHeap) fix(g *group)    { heap.Fix(h, g.idx) }

// timerHeap orders delay-blocked scopes by when they become ready.
type timerHeap []*scopeState

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].readyAt.Before(h[j].readyAt) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].timer = i
	h[j].timer = j
}
func (h *timerHeap) Push(x any) {
	s := x.(*scopeState)
	s.timer = len(*h)
	*h = append(*h, s)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	s := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	s.timer = -1
	return s
}
func (h *timerHeap) push(s *scopeState)   { heap.Push(h, s) }
func (h *timerHeap) remove(s *scopeState) { heap.Remove(h, s.timer) }
func (h *timerHeap) fix(s *scopeState)    { heap.Fix(h, s.timer) }
