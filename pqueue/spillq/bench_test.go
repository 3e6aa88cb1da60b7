package spillq_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gocrawl/gocrawl/internal/cputime"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/spillq"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// BenchmarkSteadyState is a crawl's queue in steady state with a frontier
// of 100,000 requests: one op is a Push, a Reserve and an Ack, with a
// Flush every 64 ops (the engine's loop turn). "memory" keeps everything
// in memory (limit above the frontier), "spill" keeps 1,000 in memory and
// the rest on disk (writes grouped until Flush, as the store does, or
// "ungrouped", each committed alone), "memstore" is the plain
// pqueue.MemoryStore.
func BenchmarkSteadyState(b *testing.B) {
	const frontier = 100_000
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		limit   int
		ungroup bool
	}{{"memstore", 0, false}, {"memory", 2 * frontier, false}, {"spill", 1000, false}, {"spill-ungrouped", 1000, true}} {
		b.Run(c.name, func(b *testing.B) {
			var s pqueue.Store = pqueue.NewMemoryStore()
			if c.limit > 0 {
				ss := newStore(b, spillq.Options{Limit: c.limit})
				if c.ungroup {
					spillq.Ungroup(ss)
				}
				s = ss
			}
			if err := s.Open(ctx); err != nil {
				b.Fatal(err)
			}
			fl, _ := s.(pqueue.Flusher)
			scopes := throttling.Scopes{{Name: "h.test", Amount: 1}}
			push := func(i int) {
				r := spider.MustRequest(fmt.Sprintf("http://h.test/page/%d", i), nil)
				if err := s.Push(ctx, &pqueue.Entry{Info: pqueue.Info{Queue: "h.test", Scopes: scopes}, Req: r}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range frontier {
				push(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := cputime.Process()
			for i := range b.N {
				push(frontier + i)
				e, err := s.Reserve(ctx, "h.test")
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Ack(ctx, e.ID); err != nil {
					b.Fatal(err)
				}
				if fl != nil && i%64 == 63 {
					if err := fl.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(cputime.Process()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
