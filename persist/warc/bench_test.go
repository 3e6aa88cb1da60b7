package warc

import (
	"fmt"
	"net/http"
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
			page := s1Page(1)
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

// s1Page returns page i as benchmark S1's site serves it: a title, ten
// links and filler text, 4 KiB in all.
func s1Page(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>one page %d</title></head>\n<body>\n<h1>Page %d</h1>\n<ul class=\"links\">\n", i, i)
	for k := range 10 {
		fmt.Fprintf(&b, "<li><a href=\"/page/%d\">page %d</a></li>\n", i*10+k+1, i*10+k+1)
	}
	b.WriteString("</ul>\n<p class=\"pad\">")
	const filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. "
	for room := 4096 - b.Len() - len("</p>\n</body></html>\n"); room > 0; room -= len(filler) {
		b.WriteString(filler[:min(room, len(filler))])
	}
	b.WriteString("</p>\n</body></html>\n")
	return b.String()
}

// BenchmarkPrepare measures what a Write costs its caller before the
// commit: digests, record formatting, compression and the index entry of
// one S1 exchange (a 4 KiB page), on one goroutine. Compare its ns/op
// with benchstat.
func BenchmarkPrepare(b *testing.B) {
	for _, level := range []int{1, GzipStore} {
		b.Run(fmt.Sprintf("level=%d", max(level, 0)), func(b *testing.B) {
			w, _, err := NewWriter(Options{Dir: b.TempDir(), GzipLevel: level})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			ex := s1Exchange(7)
			b.SetBytes(int64(len(ex.Payload)))
			b.ReportAllocs()
			cpu0 := cputime.Process()
			for b.Loop() {
				p, _, err := w.prepare(ex)
				if err != nil {
					b.Fatal(err)
				}
				putPending(p)
			}
			// CPU time per exchange does not depend on what else the
			// machine runs, unlike ns/op.
			b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// s1Exchange is page i of S1 as the Warc middleware hands it to the
// writer.
func s1Exchange(i int) *Exchange {
	page := s1Page(i)
	u := fmt.Sprintf("http://127.0.0.1:40123/page/%d", i)
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Content-Length": {fmt.Sprint(len(page))},
		"Date": {"Sun, 06 Dec 2026 20:00:00 GMT"}}
	return &Exchange{
		URL: u, Date: t0, IP: "127.0.0.1", Method: "GET", Status: 200, MIME: "text/html",
		Request: RequestBytes("GET", fmt.Sprintf("/page/%d", i), "127.0.0.1:40123",
			http.Header{"User-Agent": {"gocrawl/dev (+https://github.com/gocrawl/gocrawl)"}, "Accept": {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
				"Accept-Language": {"en"}, "Accept-Encoding": {"gzip"}, "Referer": {"http://127.0.0.1:40123/page/0"}}, nil),
		ResponseHead: ResponseHeadBytes("HTTP/1.1", "200 OK", h),
		Payload:      []byte(page),
	}
}

// BenchmarkMember measures the gzip member of one S1 response record
// (4 KiB page): with preset codes (level=1), stored (level=0), and by the
// general compressor at level 1 (general), which builds the codes of
// each member.
func BenchmarkMember(b *testing.B) {
	ex := s1Exchange(7)
	h := Header{{"WARC-Type", TypeResponse}, {"WARC-Record-ID", NewRecordID()}, {"WARC-Date", FormatDate(t0)},
		{"WARC-Target-URI", ex.URL}, {"WARC-Payload-Digest", Digest(ex.Payload)}}
	parts := [][]byte{ex.ResponseHead, crlf, ex.Payload}
	for _, c := range []struct {
		name string
		f    func(dst []byte) []byte
	}{
		{"level=1", func(dst []byte) []byte { out, _ := appendMember(dst, false, h, parts...); return out }},
		{"level=0", func(dst []byte) []byte { out, _ := appendMember(dst, true, h, parts...); return out }},
		{"general", func(dst []byte) []byte { out, _ := compressWith(gzipPool(1), dst, h, parts...); return out }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(ex.Payload)))
			var dst []byte
			cpu0 := cputime.Process()
			for b.Loop() {
				dst = c.f(dst[:0])
			}
			b.ReportMetric(float64((cputime.Process()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(len(dst)), "bytes")
		})
	}
}
