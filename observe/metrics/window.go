package metrics

import "time"

// startWindows tracks the observed start rate of a stream of request starts:
// the most starts in any 1 s and any 100 ms sliding window, and the starts in
// the first 500 ms after the first one. Starts are expected in (roughly)
// increasing time order; an earlier timestamp than the latest is counted as
// the latest, which can only under-estimate a burst by the reordering skew
// (microseconds between goroutines).
//
// It keeps the start times of the last second in a ring buffer, so memory is
// bounded by the highest 1 s start rate; each start costs amortised O(1).
// It is not safe for concurrent use: the owner locks.
type startWindows struct {
	ring       []int64 // start times (ns) of the last second, ring[head:tail] modulo len
	head, tail int     // absolute indices; head1s <= head100 <= tail
	head100    int
	last       int64

	first      int64 // first start (ns), 0 = none yet
	first500   int   // starts within 500 ms of first
	max1s      int
	max100ms   int
	totalSeen  int64
	windowFull bool // past the first 500 ms: first500 is final
}

const (
	window1s    = int64(time.Second)
	window100ms = int64(100 * time.Millisecond)
	window500ms = int64(500 * time.Millisecond)
)

// add records a start at t.
func (w *startWindows) add(t time.Time) {
	ns := t.UnixNano()
	if w.totalSeen > 0 && ns < w.last {
		ns = w.last
	}
	w.last = ns
	w.totalSeen++
	if w.first == 0 {
		w.first = ns
	}
	if !w.windowFull {
		if ns-w.first < window500ms {
			w.first500++
		} else {
			w.windowFull = true
		}
	}

	// Push.
	if w.tail-w.head == len(w.ring) {
		w.grow()
	}
	w.ring[w.tail%len(w.ring)] = ns
	w.tail++
	// Drop starts older than the windows: a window (t-w, t] holds the
	// starts strictly after t-w.
	for w.ring[w.head%len(w.ring)] <= ns-window1s {
		w.head++
	}
	if w.head100 < w.head {
		w.head100 = w.head
	}
	for w.ring[w.head100%len(w.ring)] <= ns-window100ms {
		w.head100++
	}
	w.max1s = max(w.max1s, w.tail-w.head)
	w.max100ms = max(w.max100ms, w.tail-w.head100)
}

func (w *startWindows) grow() {
	n := max(16, 2*len(w.ring))
	ring := make([]int64, n)
	for i := w.head; i < w.tail; i++ {
		ring[i%n] = w.ring[i%len(w.ring)]
	}
	// Indices are absolute; only the modulus changes, so re-place by
	// absolute index.
	w.ring = ring
}
