package pqueue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/internal/cputime"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// benchThrottler is the real throttler with eviction off, on a fake clock.
func benchThrottler(b *testing.B) (*throttling.Throttler, *clock.Fake) {
	b.Helper()
	s := settings.New()
	if err := s.SetMap(map[string]any{"THROTTLING_SCOPE_LIMIT": 0, "THROTTLING_SCOPE_MAX_IDLE": 0, "RANDOMIZE_DOWNLOAD_DELAY": false}, settings.SourceCommandLine, "bench"); err != nil {
		b.Fatal(err)
	}
	clk := clock.NewFake(t0)
	thr, err := throttling.New(s, throttling.Options{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	return thr, clk
}

func scopeName(i int) string { return fmt.Sprintf("h%d.example", i) }

// BenchmarkPopManyBackingOff measures a pop when nearly every scope
// backs off: 1,000,000 queued requests over 100,000 scopes, 99,999 of them backing off and one ready.
// Each iteration pops the ready scope's best request, completes it and
// queues a replacement, so the queue stays at 1,000,000.
func BenchmarkPopManyBackingOff(b *testing.B) {
	const nReq, nScopes = 1_000_000, 100_000
	thr, clk := benchThrottler(b)
	q, err := pqueue.NewThrottlingAware(pqueue.NewMemoryStore(), thr, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := spider.MustRequest("https://h0.example/", nil)
	scopes := make([]throttling.Scopes, nScopes)
	for i := range scopes {
		scopes[i] = throttling.Scopes{{Name: scopeName(i)}}
		if i > 0 {
			thr.DelayScope(scopeName(i), time.Hour)
		}
	}
	now := clk.Now()
	for i := range nReq {
		if _, err := q.Push(ctx, now, req, scopes[i%nScopes], 0); err != nil {
			b.Fatal(err)
		}
	}
	// The first Pops park the 99,999 blocked sub-queues at their scopes
	// (the second one does: the ready scope's head is the oldest request,
	// so it comes out first, and round-robin then puts it last).
	var p *pqueue.Popped
	for range 2 {
		p, _, err = q.Pop(ctx, now)
		if err != nil || p == nil {
			b.Fatalf("first Pop: %v %v", p, err)
		}
		thr.Done(ctx, p.Req, p.Scopes, now, nil, nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	for range b.N {
		p, _, err = q.Pop(ctx, now)
		if err != nil || p == nil {
			b.Fatalf("Pop: %v %v", p, err)
		}
		thr.Done(ctx, p.Req, p.Scopes, now, nil, nil)
		if err := q.Ack(ctx, p.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := q.Push(ctx, now, req, scopes[0], 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu)
	if p.Scopes[0].Name != scopeName(0) {
		b.Fatalf("popped a request of %s, which is backing off", p.Scopes[0].Name)
	}
}

// BenchmarkSteadyState is benchmark (b): 10,000 active scopes with 10
// requests each; each iteration queues a request for a random scope, pops
// the next ready one and completes it. "throttler" uses the real
// throttler; "queue-only" a gate where every scope is always ready, to
// show the queue's own share.
func BenchmarkSteadyState(b *testing.B) {
	b.Run("throttler", func(b *testing.B) {
		thr, _ := benchThrottler(b)
		steadyState(b, thr, func(p *pqueue.Popped) { thr.Done(context.Background(), p.Req, p.Scopes, t0, nil, nil) })
	})
	b.Run("queue-only", func(b *testing.B) {
		steadyState(b, nopGate{}, func(*pqueue.Popped) {})
	})
}

// nopGate lets every request through at once.
type nopGate struct{}

func (nopGate) ScopeWait(time.Time, string, float64) time.Duration { return 0 }
func (nopGate) Sent(time.Time, throttling.Scopes)                  {}
func (nopGate) Watch(func(string))                                 {}

func steadyState(b *testing.B, gate pqueue.Gate, done func(*pqueue.Popped)) {
	const nScopes, perScope = 10_000, 10
	q, err := pqueue.NewThrottlingAware(pqueue.NewMemoryStore(), gate, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	ctx, now := context.Background(), t0
	req := spider.MustRequest("https://h0.example/", nil)
	scopes := make([]throttling.Scopes, nScopes)
	for i := range scopes {
		scopes[i] = throttling.Scopes{{Name: scopeName(i)}}
	}
	for i := range nScopes * perScope {
		q.Push(ctx, now, req, scopes[i%nScopes], 0)
	}
	rnd := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cputime.Process()
	defer reportCPU(b, cpu)
	for range b.N {
		if _, err := q.Push(ctx, now, req, scopes[rnd.IntN(nScopes)], rnd.IntN(3)); err != nil {
			b.Fatal(err)
		}
		p, _, err := q.Pop(ctx, now)
		if err != nil || p == nil {
			b.Fatalf("Pop: %v %v", p, err)
		}
		done(p)
		if err := q.Ack(ctx, p.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryPerRequest is benchmark (c): heap bytes per queued
// request in the throttling-aware queue over the memory store, 1,000,000
// requests over 10,000 scopes. "queue-B/req" pushes one shared request
// for every entry: the queue's own cost, with the 96-byte compact form the
// memory store keeps of each (the shared request's copy). "total-B/req"
// pushes a typical request each (URL parsed from a 40-byte string, no
// headers or meta), which is dropped once queued: what a queued link
// costs.
func BenchmarkMemoryPerRequest(b *testing.B) {
	const nReq, nScopes = 1_000_000, 10_000
	for _, distinct := range []bool{false, true} {
		name := map[bool]string{false: "queue", true: "total"}[distinct]
		b.Run(name, func(b *testing.B) {
			for range b.N {
				thr, clk := benchThrottler(b)
				scopes := make([]throttling.Scopes, nScopes)
				for i := range scopes {
					scopes[i] = throttling.Scopes{{Name: scopeName(i)}}
				}
				shared := spider.MustRequest("https://h0.example/", nil)
				before := heapBytes()
				q, _ := pqueue.NewThrottlingAware(pqueue.NewMemoryStore(), thr, zerolog.Nop())
				ctx, now := context.Background(), clk.Now()
				for i := range nReq {
					r := shared
					if distinct {
						r = spider.MustRequest(fmt.Sprintf("https://h%d.example/page/%07d", i%nScopes, i), nil)
					}
					q.Push(ctx, now, r, scopes[i%nScopes], 0)
				}
				after := heapBytes()
				b.ReportMetric(float64(after-before)/nReq, name+"-B/req")
				runtime.KeepAlive(q)
			}
		})
	}
}

func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cputime.Process()-start)/float64(b.N), "cpu-ns/op")
}
