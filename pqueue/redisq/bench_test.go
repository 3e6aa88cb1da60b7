package redisq_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// benchReq is a typical crawl request: one of 100 hosts, a 60-character
// path, a depth and a retry counter in meta.
func benchReq(i int) (*spider.Request, throttling.Scopes) {
	host := fmt.Sprintf("shop-%d.example.com", i%100)
	r := spider.MustRequest(fmt.Sprintf("https://%s/catalogue/category/books/item-%d/index.html", host, i), nil)
	r.Depth = 3
	r.Set("retry_times", 0)
	return r, throttling.Scopes{{Name: host}}
}

// BenchmarkAdmissions measures the frontier's admissions per second with
// 1, 2 and 4 workers (each its own connection, as separate processes
// would have) popping and acknowledging from one Redis, scopes without
// limits: the cost of the pop and apply scripts alone, no HTTP.
//
//	go test -run '^$' -bench Admissions -benchtime 20000x ./pqueue/redisq/
func BenchmarkAdmissions(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			url := redistest.Shared(b).URL()
			l := layout(b, 1)
			gates := &fixedGates{def: throttling.GateParams{}}
			var fs []*redisq.Frontier
			for w := range workers {
				c := dialURL(b, url)
				st, err := redisq.NewStore(redisq.Options{Client: c, Layout: l, Codec: codec, Owner: fmt.Sprintf("w%d", w)})
				if err != nil {
					b.Fatal(err)
				}
				gates.store = st
				f, err := redisq.NewFrontier(redisq.FrontierOptions{Store: st, Gates: gates})
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Open(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { f.Close(context.Background()) })
				fs = append(fs, f)
			}
			ctx := context.Background()
			for i := range b.N {
				req, sc := benchReq(i)
				if err := fs[0].PushUnique(ctx, time.Now(), req, sc, 0, dupefilter.Of(req), true); err != nil {
					b.Fatal(err)
				}
			}
			if err := fs[0].Flush(ctx); err != nil {
				b.Fatal(err)
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, f := range fs {
				wg.Go(func() {
					for left.Load() > 0 {
						p, _, err := f.Pop(ctx, time.Now().Add(time.Hour)) // past every hint
						if err != nil {
							b.Error(err)
							return
						}
						if p == nil {
							continue
						}
						left.Add(-1)
						f.Ack(ctx, p.ID)
					}
					f.Flush(ctx)
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "admissions/s")
		})
	}
}

// BenchmarkMemory measures what Redis holds per queued request, per
// fingerprint in a set and per fingerprint in a Bloom filter (INFO memory,
// used_memory, before and after), each on a server of its own. The size is
// GOCRAWL_BENCH_REDIS_N (default 10,000,000: about 2.6 GB for the queue and
// half an hour on a loaded machine); GOCRAWL_BENCH_REDIS_PHASES picks some
// of queued,fingerprints,bloom.
//
//	go test -run '^$' -bench Memory -benchtime 1x -timeout 120m ./pqueue/redisq/
func BenchmarkMemory(b *testing.B) {
	n := 10_000_000
	if v := os.Getenv("GOCRAWL_BENCH_REDIS_N"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	phases := "queued,fingerprints,bloom"
	if v := os.Getenv("GOCRAWL_BENCH_REDIS_PHASES"); v != "" {
		phases = v
	}
	ctx := context.Background()
	measure := func(name string, fill func(c redis.UniversalClient)) {
		if !strings.Contains(phases, name) {
			return
		}
		srv := redistest.Start(b, redistest.Options{})
		defer srv.Kill()
		c := dialURL(b, srv.URL())
		used := func() float64 {
			info, err := c.Info(ctx, "memory").Result()
			if err != nil {
				b.Fatal(err)
			}
			for _, line := range strings.Split(info, "\r\n") {
				if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
					x, _ := strconv.ParseFloat(v, 64)
					return x
				}
			}
			b.Fatal("no used_memory in INFO")
			return 0
		}
		before := used()
		t0 := time.Now()
		fill(c)
		after := used()
		b.ReportMetric((after-before)/float64(n), name+"-B/entry")
		b.Logf("%s: %d entries, %.0f MB, %.1f bytes each, filled in %v", name, n, (after-before)/1e6, (after-before)/float64(n), time.Since(t0).Round(time.Second))
	}
	for range b.N {
		measure("queued", func(c redis.UniversalClient) { fillQueue(b, c, n) })
		measure("fingerprints", func(c redis.UniversalClient) { fillSeen(b, c, n, redisq.Dedupe{}) })
		bloom, err := redisq.BloomFor(int64(n), 0.001, 1)
		if err != nil {
			b.Fatal(err)
		}
		measure("bloom", func(c redis.UniversalClient) { fillSeen(b, c, n, bloom) })
	}
}

// fillQueue pushes n requests through the frontier (its outbox batches
// them into apply calls), without fingerprints.
func fillQueue(b *testing.B, c redis.UniversalClient, n int) {
	l := layout(b, 1)
	st, err := redisq.NewStore(redisq.Options{Client: c, Layout: l, Codec: codec, Owner: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	f, err := redisq.NewFrontier(redisq.FrontierOptions{Store: st, Gates: &fixedGates{store: st}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := f.Open(ctx); err != nil {
		b.Fatal(err)
	}
	defer f.Close(ctx)
	for i := range n {
		req, sc := benchReq(i)
		if err := f.PushUnique(ctx, time.Now(), req, sc, 0, dupefilter.Fingerprint{}, false); err != nil {
			b.Fatal(err)
		}
		if i%50_000 == 0 {
			if err := f.Flush(ctx); err != nil { // bound the outbox
				b.Fatal(err)
			}
		}
	}
	if err := f.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if got := st.Len(); got != n {
		b.Fatalf("%d queued, want %d", got, n)
	}
}

// fillSeen records n fingerprints in the shard's set or Bloom filter,
// with the dupefilter's script, 1,000 calls per pipeline.
func fillSeen(b *testing.B, c redis.UniversalClient, n int, d redisq.Dedupe) {
	s := redisq.NewSet(c, layout(b, 1), d)
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
		if err := s.AddAll(ctx, fps(i, min(i+1000, n))); err != nil {
			b.Fatal(err)
		}
	}
	if got := s.Len(); d.Bloom && got < n*99/100 || !d.Bloom && got != n {
		b.Fatalf("%d fingerprints recorded, want %d", got, n)
	}
}

func fps(from, to int) []dupefilter.Fingerprint {
	out := make([]dupefilter.Fingerprint, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fp(i))
	}
	return out
}
