package pebbleq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/internal/cputime"
	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// benchRequests is the size of BenchmarkQueueMillions; override with
// GOCRAWL_BENCH_REQUESTS (the documented number is 5,000,000).
func benchRequests() int {
	n := 5_000_000
	if v := os.Getenv("GOCRAWL_BENCH_REQUESTS"); v != "" {
		fmt.Sscan(v, &n)
	}
	return n
}

// benchEntry is a typical crawl request: a host sub-queue (100 hosts), a
// path, a depth and a retry counter in meta.
func benchEntry(i int) *pqueue.Entry {
	host := fmt.Sprintf("shop-%d.example.com", i%100)
	r := spider.MustRequest(fmt.Sprintf("https://%s/catalogue/category/books/item-%d/index.html", host, i), nil)
	r.Depth = 3
	r.Set("retry_times", 0)
	return &pqueue.Entry{Info: pqueue.Info{Queue: host, Priority: i % 3, Scopes: throttling.Scopes{{Name: host}}}, Req: r}
}

// openSyncedStore opens a store as a crawl does: the job's background
// syncer runs and every write asks it for a WAL sync.
func openSyncedStore(b *testing.B, dir string) *jobStore {
	return openSyncedStoreWith(b, dir, false)
}

// openSyncedStoreWith is openSyncedStore, with writes grouped until Flush
// (as JOBDIR's store is) when group is true.
func openSyncedStoreWith(b *testing.B, dir string, group bool) *jobStore {
	j, err := jobdir.Open(dir, "test", jobdir.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := pebbleq.New(j.DB(), pebbleq.Options{Codec: reqcodec.Codec{Spider: &testSpider{}}, Prefix: jobdir.PrefixQueue, AfterWrite: j.Written, GroupWrites: group})
	if err != nil {
		b.Fatal(err)
	}
	js := &jobStore{Store: s, job: j, dir: dir}
	b.Cleanup(func() { js.Store.Close(context.Background()); js.job.Close() })
	return js
}

func peakRSSMB() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// BenchmarkQueueMillions pushes benchRequests() requests into 100 host
// sub-queues, then reserves and acks them all, like a crawl draining a
// huge frontier. Run it alone, once:
//
//	go test -run '^$' -bench QueueMillions -benchtime 1x ./pqueue/pebbleq/
//
// It reports push and pop (reserve+ack) rates, the combined push+pop rate,
// bytes on disk per queued request, and the process's peak RSS.
func BenchmarkQueueMillions(b *testing.B) {
	n := benchRequests()
	ctx := context.Background()
	for b.Loop() {
		dir := b.TempDir()
		s := openSyncedStore(b, dir)
		if err := s.Open(ctx); err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), cputime.Process()
		for i := range n {
			if err := s.Push(ctx, benchEntry(i)); err != nil {
				b.Fatal(err)
			}
		}
		pushDur := time.Since(start)
		if err := s.job.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := s.job.DB().Flush(); err != nil {
			b.Fatal(err)
		}
		onDisk := dirSize(filepath.Join(dir, "state"))
		runtime.GC()
		start = time.Now()
		popped := 0
		for popped < n {
			for h := range 100 {
				e, err := s.Reserve(ctx, fmt.Sprintf("shop-%d.example.com", h))
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Ack(ctx, e.ID); err != nil {
					b.Fatal(err)
				}
				popped++
			}
		}
		popDur := time.Since(start)
		cpu := cputime.Process() - cpu0
		if s.Len() != 0 {
			b.Fatalf("Len = %d after popping everything", s.Len())
		}
		b.ReportMetric(float64(n)/pushDur.Seconds(), "push/s")
		b.ReportMetric(float64(n)/popDur.Seconds(), "pop+ack/s")
		b.ReportMetric(float64(n)/(pushDur+popDur).Seconds(), "push+pop/s")
		b.ReportMetric(float64(onDisk)/float64(n), "disk-bytes/req")
		b.ReportMetric(peakRSSMB(), "peak-RSS-MB")
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "CPU-µs/push+pop")
	}
}

// BenchmarkPushPopSteady measures a crawl in its steady state: the queue
// holds 100,000 requests and every iteration pushes one and pops (reserve
// + ack) one.
func BenchmarkPushPopSteady(b *testing.B) {
	ctx := context.Background()
	s := openSyncedStore(b, b.TempDir())
	if err := s.Open(ctx); err != nil {
		b.Fatal(err)
	}
	const backlog = 100_000
	for i := range backlog {
		if err := s.Push(ctx, benchEntry(i)); err != nil {
			b.Fatal(err)
		}
	}
	i := backlog
	b.ResetTimer()
	for b.Loop() {
		if err := s.Push(ctx, benchEntry(i)); err != nil {
			b.Fatal(err)
		}
		e, err := s.Reserve(ctx, fmt.Sprintf("shop-%d.example.com", i%100))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Ack(ctx, e.ID); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "push+pop/s")
}

// BenchmarkPushPopHeadSteady is BenchmarkPushPopSteady as the throttling-
// aware queue drives a store: after each reserve it asks for the sub-queue's
// next head (pqueue.ThrottlingAware.popReady), so the read-ahead must
// survive Head. Each write is committed alone (the store without
// GroupWrites).
func BenchmarkPushPopHeadSteady(b *testing.B) {
	benchPushPopHead(b, 0)
}

// BenchmarkPushPopHeadGrouped is BenchmarkPushPopHeadSteady with the
// store as JOBDIR opens it (GroupWrites) and a Flush every pairs
// push+pop pairs, as the engine flushes once per turn of its loop: a turn
// handles the pages that finished since the last one, one when the crawl
// is slow, several when it is fast (each page: its follow-up requests,
// then its acknowledgement).
func BenchmarkPushPopHeadGrouped(b *testing.B) {
	for _, pairs := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("pairs-per-flush=%d", pairs), func(b *testing.B) { benchPushPopHead(b, pairs) })
	}
}

// benchPushPopHead runs the steady state with a Flush every flushEvery
// pairs (0: writes not grouped).
func benchPushPopHead(b *testing.B, flushEvery int) {
	ctx := context.Background()
	s := openSyncedStoreWith(b, b.TempDir(), flushEvery > 0)
	if err := s.Open(ctx); err != nil {
		b.Fatal(err)
	}
	const backlog = 100_000
	for i := range backlog {
		if err := s.Push(ctx, benchEntry(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	i := backlog
	b.ResetTimer()
	cpu0 := cputime.Process()
	for b.Loop() {
		if err := s.Push(ctx, benchEntry(i)); err != nil {
			b.Fatal(err)
		}
		queue := fmt.Sprintf("shop-%d.example.com", i%100)
		e, err := s.Reserve(ctx, queue)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Head(ctx, queue); err != nil {
			b.Fatal(err)
		}
		if err := s.Ack(ctx, e.ID); err != nil {
			b.Fatal(err)
		}
		i++
		if flushEvery > 0 && i%flushEvery == 0 {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "push+pop/s")
	b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N)/1000, "CPU-µs/push+pop")
}
