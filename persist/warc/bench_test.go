package warc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/internal/cputime"
)

// BenchmarkWrite measures the writer's throughput: exchanges of a 4 KB
// HTML page, as in benchmark S1 (request, response, compression, one write per exchange),
// written from as many goroutines as GOMAXPROCS, synced once a second
// (the default WARC_SYNC_INTERVAL). cpu-µs/exchange is the process's CPU
// time per exchange, which other load on the machine does not change. Run
// it with
//
//	go test ./persist/warc -run '^$' -bench Write -benchtime 5000x
func BenchmarkWrite(b *testing.B) {
	for _, c := range []struct {
		dedup Dedup
		level int
	}{{DedupOff, 1}, {DedupURL, 1}, {DedupURL, GzipStore}} {
		b.Run(fmt.Sprintf("dedup=%d/level=%d", c.dedup, max(c.level, 0)), func(b *testing.B) {
			w, _, err := NewWriter(Options{Dir: b.TempDir(), Prefix: "bench", Software: "gocrawl/bench",
				Dedup: c.dedup, GzipLevel: c.level, SyncInterval: time.Second, MaxSize: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			page := strings.Repeat("<p>Quotes to scrape, page text and markup.</p>\n", 4<<10/48)
			b.SetBytes(int64(len(page)))
			b.ResetTimer()
			cpu0 := cputime.Process()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					ex := exchange(fmt.Sprintf("https://example.com/%p/%d", pb, i), 200, page)
					if _, err := w.Write(ex); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exchanges/s")
			// CPU time per exchange does not depend on what else the
			// machine runs, unlike the rates above.
			b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(b.N), "cpu-µs/exchange")
		})
	}
}
