package linkextract

import (
	"net/url"
	"testing"

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
}
