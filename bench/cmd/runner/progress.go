package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RSSPoint is the runner's memory when the crawl had handled Pages
// responses.
type RSSPoint struct {
	Pages   int64   `json:"pages"`
	Seconds float64 `json:"seconds"`
	// RSSMB is the resident set size (VmRSS) in MiB.
	RSSMB float64 `json:"rss_mb"`
	// HeapMB is the Go heap in use (runtime.MemStats.HeapInuse) in MiB:
	// live objects and garbage not yet collected.
	HeapMB float64 `json:"heap_mb"`
	// HeapLiveMB is the heap still reachable (HeapAlloc right after a
	// forced collection) in MiB: what the crawl holds. With GOGC=100 the
	// heap grows to about twice this before the next collection.
	HeapLiveMB float64 `json:"heap_live_mb"`
	// StackMB is the goroutines' stacks (StackInuse) in MiB: two
	// goroutines per open connection, one per request in flight.
	StackMB float64 `json:"stack_mb"`
	// FreeMB is heap memory free but not yet returned to the system
	// (HeapIdle - HeapReleased) in MiB: resident until the scavenger
	// returns it.
	FreeMB float64 `json:"free_mb"`
}

// progress counts handled responses and, every `every` of them, records an
// RSSPoint (every 0: counting only).
type progress struct {
	n     atomic.Int64
	bytes atomic.Int64 // body bytes received (addBytes)
	every int64
	start time.Time

	mu     sync.Mutex
	points []RSSPoint

	// heapAt, heapFile: write a heap profile to heapFile when the count
	// passes heapAt (a diagnostic of the memory curve).
	heapAt   int64
	heapFile string
}

func newProgress(every int64) *progress { return &progress{every: every, start: time.Now()} }

func (p *progress) add(d int64) {
	n := p.n.Add(d)
	if p.heapAt > 0 && n >= p.heapAt && n-d < p.heapAt {
		runtime.GC() // the profile shows the heap as of the last collection: make it now
		if err := writeProfile("heap", p.heapFile); err != nil {
			fmt.Fprintln(os.Stderr, "runner: -heapprofile:", err)
		}
	}
	if p.every <= 0 || n/p.every == (n-d)/p.every {
		return
	}
	p.sample(n - n%p.every)
}

// addBytes counts the body of a response.
func (p *progress) addBytes(n int) { p.bytes.Add(int64(n)) }

func (p *progress) sample(pages int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pt := RSSPoint{Pages: pages, Seconds: time.Since(p.start).Seconds(), RSSMB: float64(rssBytes()) / (1 << 20),
		HeapMB: float64(ms.HeapInuse) / (1 << 20), StackMB: float64(ms.StackInuse) / (1 << 20),
		FreeMB: float64(ms.HeapIdle-ms.HeapReleased) / (1 << 20)}
	// The live heap: a full collection, once per sample (ten in a crawl
	// of a million pages, against hundreds it runs anyway). The runtime's
	// own figure (/gc/heap/live:bytes) counts what was allocated while
	// the last mark ran as live.
	runtime.GC()
	runtime.ReadMemStats(&ms)
	pt.HeapLiveMB = float64(ms.HeapAlloc) / (1 << 20)
	p.mu.Lock()
	p.points = append(p.points, pt)
	p.mu.Unlock()
}

func (p *progress) curve() []RSSPoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]RSSPoint(nil), p.points...)
}

// rssBytes reads the process's resident set size from /proc (0 where
// there is no /proc).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
