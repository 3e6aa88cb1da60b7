package dupefilter_test

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
)

// BenchmarkFingerprint measures computing one request's fingerprint.
func BenchmarkFingerprint(b *testing.B) {
	for _, tt := range []struct{ name, url string }{
		{"query", "https://Example.com:443/catalogue/page-2.html?b=2&a=1#top"},     // sorted and re-encoded
		{"sorted", "http://localhost:41234/catalogue/page-2.html?page=2&sort=asc"}, // kept as it is
		{"plain", "http://localhost:41234/page/12345"},                             // a crawl's usual link
	} {
		b.Run(tt.name, func(b *testing.B) {
			r := spider.MustRequest(tt.url, nil)
			b.ReportAllocs()
			for b.Loop() {
				dupefilter.Of(r)
			}
		})
	}
}

// BenchmarkMemorySetBytesPerFingerprint reports the heap bytes the memory
// set uses per fingerprint, with 1,000,000 fingerprints.
func BenchmarkMemorySetBytesPerFingerprint(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	for range b.N {
		before := heapBytes()
		s := dupefilter.NewMemorySet()
		var fp dupefilter.Fingerprint
		for i := range n {
			binary.BigEndian.PutUint64(fp[:], uint64(i)*0x9E3779B97F4A7C15)
			binary.BigEndian.PutUint64(fp[8:], uint64(i))
			s.Add(ctx, fp)
		}
		after := heapBytes()
		b.ReportMetric(float64(after-before)/n, "B/fingerprint")
		runtime.KeepAlive(s)
	}
}

func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
