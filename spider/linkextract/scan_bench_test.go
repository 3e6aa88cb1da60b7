package linkextract

import (
	"net/url"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/internal/cputime"
)

// BenchmarkScanDocument is the cost of ScanDocument on pages of benchmark
// S1 (4 KiB, 10 links each, from a local simsite), next to the
// tokenizer-based scan it replaced (scanDocumentTokenizer), in the same
// run; Links adds the links of the follow spider's extractor (default
// options) to the scan. docs/performance.md has the numbers:
//
//	go test -run '^$' -bench ScanDocument -benchmem -count 5 ./linkextract/
func BenchmarkScanDocument(b *testing.B) {
	pages := s1Pages(b, 64)
	u, _ := url.Parse("http://127.0.0.1:8080/page/1")
	run := func(b *testing.B, scan func([]byte, *url.URL) *Document, links bool) {
		ex := MustNew(Options{})
		b.ReportAllocs()
		b.SetBytes(int64(len(pages[0])))
		i := 0
		start := cputime.Process()
		for b.Loop() {
			d := scan(pages[i%len(pages)], u)
			if links {
				ex.Links(d)
			}
			i++
		}
		b.ReportMetric(float64(cputime.Process()-start)/float64(i), "cpu-ns/op")
	}
	b.Run("Scanner", func(b *testing.B) { run(b, ScanDocument, false) })
	b.Run("Tokenizer", func(b *testing.B) { run(b, scanDocumentTokenizer, false) })
	b.Run("Scanner+Links", func(b *testing.B) { run(b, ScanDocument, true) })
	b.Run("Tokenizer+Links", func(b *testing.B) { run(b, scanDocumentTokenizer, true) })
	// The two scans alternate on the same pages in chunks of 16, each
	// timed by the process's CPU clock, so that the load of a shared
	// machine weighs on both alike: "x" is the tokenizer's CPU over the
	// scanner's.
	b.Run("Interleaved", func(b *testing.B) {
		var cpuScan, cpuTok time.Duration
		done := 0
		for b.Loop() {
			t0 := cputime.Process()
			for k := range 16 {
				ScanDocument(pages[(done+k)%len(pages)], u)
			}
			t1 := cputime.Process()
			for k := range 16 {
				scanDocumentTokenizer(pages[(done+k)%len(pages)], u)
			}
			t2 := cputime.Process()
			cpuScan += t1 - t0
			cpuTok += t2 - t1
			done += 16
		}
		b.ReportMetric(float64(cpuScan)/float64(done), "scan-cpu-ns/page")
		b.ReportMetric(float64(cpuTok)/float64(done), "tokenizer-cpu-ns/page")
		b.ReportMetric(float64(cpuTok)/float64(cpuScan), "x")
	})
}
