package engine

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/internal/cputime"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// benchPages is the size of the benchmark site.
const benchPages = 10_000

// benchSite serves benchPages pages of about 2 KB; page i links to pages
// 2i+1 and 2i+2 (a binary tree, so every page is reached once) plus a few
// links back to already-seen pages for the duplicate filter to drop.
func benchSite() http.Handler {
	filler := strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n", 24)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || i < 0 || i >= benchPages {
			http.NotFound(w, r)
			return
		}
		var b strings.Builder
		b.Grow(2048)
		fmt.Fprintf(&b, "<!DOCTYPE html><html><head><title>Page %d</title></head><body><h1>Page %d</h1>\n", i, i)
		for _, c := range []int{2*i + 1, 2*i + 2, i / 2, 0} {
			if c < benchPages {
				fmt.Fprintf(&b, "<a href=\"/p/%d\">page %d</a>\n", c, c)
			}
		}
		b.WriteString(filler)
		b.WriteString("</body></html>")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		w.Write([]byte(b.String()))
	})
}

// benchSpider follows every link and emits one item per page, like a
// typical broad crawl's callback.
type benchSpider struct{ spider.Base }

func (*benchSpider) Name() string { return "bench" }

func (s *benchSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	out.Item(map[string]any{"url": res.URL.String(), "title": doc.Find("title").Text()})
	out.FollowAll(res, doc.Find("a[href]"), s.Parse)
	return nil
}

func benchSettings(b *testing.B) *settings.Settings {
	s := settings.New()
	for name, v := range map[string]any{
		"CONCURRENT_REQUESTS":            64,
		"CONCURRENT_REQUESTS_PER_DOMAIN": 0,
		"CONCURRENT_REQUESTS_PER_IP":     0,
		"DOWNLOAD_DELAY":                 0.0,
		"ROBOTSTXT_OBEY":                 false,
		"LOG_LEVEL":                      "ERROR",
	} {
		if err := s.Set(name, v, settings.SourceCommandLine, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// listSpider starts from every page's URL (yielded lazily) and emits an
// item per response without parsing it: the engine, downloader, middleware
// and server costs alone.
type listSpider struct{ base string }

func (*listSpider) Name() string { return "bench-list" }

func (s *listSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for i := range benchPages {
			if !yield(spider.NewRequest(s.base+"/p/"+strconv.Itoa(i), nil)) {
				return
			}
		}
	}
}

func (s *listSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.Item(map[string]any{"url": res.URL.String(), "bytes": len(res.Body)})
	return nil
}

// BenchmarkCrawl crawls the 10,000-page site from an in-process server on
// 127.0.0.1 (which shares the CPUs with the crawler) with throttling out of
// the way, and reports pages/s, heap allocations per page and CPU time per
// page (server included). "follow" parses every page with goquery and
// follows its links, as a real spider does; "list" starts from the 10,000
// URLs and does not parse, which isolates the framework's own cost.
func BenchmarkCrawl(b *testing.B) {
	srv := httptest.NewServer(benchSite())
	defer srv.Close()
	for _, tc := range []struct {
		name string
		sp   func() spider.Spider
	}{
		{"follow", func() spider.Spider {
			return &benchSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/p/0"}}}
		}},
		{"list", func() spider.Spider { return &listSpider{base: srv.URL} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var pages, mallocs, elapsed float64
			var cpu time.Duration
			for range b.N {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				cpu0 := cputime.Process()
				e, err := New(tc.sp(), benchSettings(b), Options{})
				if err != nil {
					b.Fatal(err)
				}
				res, err := e.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				cpu += cputime.Process() - cpu0
				runtime.ReadMemStats(&after)
				if got := res.Stats["downloader/response_status_count/200"]; got != benchPages {
					b.Fatalf("crawled %v pages, want %d", got, benchPages)
				}
				pages += benchPages
				elapsed += res.Elapsed.Seconds()
				mallocs += float64(after.Mallocs - before.Mallocs)
			}
			b.ReportMetric(pages/elapsed, "pages/s")
			b.ReportMetric(mallocs/pages, "allocs/page")
			// CPU per page (crawler and server together) is what the
			// throughput on an idle machine follows: at best
			// cores / (cpu-µs/page) pages per µs.
			b.ReportMetric(float64(cpu.Microseconds())/pages, "cpu-µs/page")
			b.ReportMetric(0, "ns/op")
		})
	}
}
