package spider_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/internal/cputime"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spider/linkextract"
)

// benchPages fetches pages of the site of benchmark S1 (bench/: 20,000
// pages of 4 KiB in a tree of fanout 10, links mixing "/page/N",
// "../page/N" and absolute URLs) from a local simsite.
func benchPages(b *testing.B, n int) []*spider.Response {
	b.Helper()
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{Name: "one", Seed: 1,
		Pages: simsite.PagesConfig{Count: 20000, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var out []*spider.Response
	for i := range n {
		// Pages with children: the first 2,000 of the tree have 10 each.
		u := srv.URL("one") + simsite.PagePath(i*7%1999+1)
		resp, err := http.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		req := spider.MustRequest(u, nil)
		out = append(out, &spider.Response{URL: req.URL, Status: resp.StatusCode, Header: resp.Header, Body: body, Request: req})
	}
	return out
}

// fresh returns a copy of r without its cached parse, as a new download.
func fresh(r *spider.Response) *spider.Response {
	return &spider.Response{URL: r.URL, Status: r.Status, Header: r.Header, Body: r.Body, Request: r.Request}
}

// counter is an Output that counts requests.
type counter struct{ n atomic.Int64 }

func (c *counter) Item(any)                {}
func (c *counter) Request(*spider.Request) { c.n.Add(1) }
func (c *counter) Follow(res *spider.Response, ref string, cb spider.Callback) {
	if req, err := res.NewRequest(ref, cb); err == nil {
		c.Request(req)
	}
}
func (c *counter) FollowAll(res *spider.Response, sel *goquery.Selection, cb spider.Callback) {
	for _, ref := range spider.Hrefs(sel) {
		c.Follow(res, ref, cb)
	}
}

type benchCrawl struct{ spider.CrawlSpider }

func (*benchCrawl) Name() string { return "bench" }

func (s *benchCrawl) ParseItem(context.Context, *spider.Response, spider.Output) error { return nil }

// threeRules is a crawl spider with three rules of the usual kinds: a
// callback rule selected by a URL pattern, a follow rule with allow and
// deny patterns, and a follow rule restricted to a region of the page.
func threeRules() *benchCrawl {
	s := &benchCrawl{}
	s.Rules = []spider.Rule{
		{Extractor: linkextract.MustNew(linkextract.Options{Allow: []string{`/page/\d*[05]$`}}), Callback: s.ParseItem},
		{Extractor: linkextract.MustNew(linkextract.Options{Allow: []string{`/page/\d*[1-4]$`}, Deny: []string{`/login|/logout`}}), Follow: true},
		{Extractor: linkextract.MustNew(linkextract.Options{RestrictCSS: []string{"ul.links"}}), Follow: true},
	}
	return s
}

// BenchmarkLinks is the cost per page, parse included, of following links:
// FollowAll with one selector (what the S1 spider does) against a
// CrawlSpider with three rules and against the follow spider's single
// rule. Every iteration parses a fresh response. docs/performance.md has
// the numbers:
//
//	go test -run '^$' -bench Links -count 10 ./spider/ | tee /tmp/links.txt
func BenchmarkLinks(b *testing.B) {
	pages := benchPages(b, 64)
	ctx := context.Background()
	run := func(b *testing.B, parse func(res *spider.Response, out spider.Output) error) {
		var out counter
		b.ReportAllocs()
		i := 0
		start := cputime.Process()
		for b.Loop() {
			if err := parse(fresh(pages[i%len(pages)]), &out); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(cputime.Process()-start)/float64(i), "cpu-ns/op")
		b.ReportMetric(float64(out.n.Load())/float64(i), "links/page")
	}
	b.Run("FollowAll", func(b *testing.B) {
		run(b, func(res *spider.Response, out spider.Output) error {
			out.FollowAll(res, res.Find("a[href]"), nil)
			return nil
		})
	})
	b.Run("Rules3", func(b *testing.B) {
		s := threeRules()
		run(b, func(res *spider.Response, out spider.Output) error { return s.FollowRules(ctx, res, out) })
	})
	b.Run("Rules1", func(b *testing.B) {
		u, _ := url.Parse(pages[0].URL.String())
		s := &benchCrawl{}
		s.Rules = []spider.Rule{{Extractor: linkextract.MustNew(linkextract.Options{AllowDomains: []string{u.Hostname()}}), Follow: true}}
		run(b, func(res *spider.Response, out spider.Output) error { return s.FollowRules(ctx, res, out) })
	})
	// FollowAll and Rules3 alternate on the same pages in chunks of 16,
	// each timed by the process's CPU clock, so that the load of a shared
	// machine weighs on both alike: the steadiest form of the comparison.
	b.Run("Interleaved", func(b *testing.B) {
		s := threeRules()
		var out counter
		var cpuA, cpuB time.Duration
		pagesDone := 0
		for b.Loop() {
			t0 := cputime.Process()
			for k := range 16 {
				res := fresh(pages[(pagesDone+k)%len(pages)])
				out.FollowAll(res, res.Find("a[href]"), nil)
			}
			t1 := cputime.Process()
			for k := range 16 {
				if err := s.FollowRules(ctx, fresh(pages[(pagesDone+k)%len(pages)]), &out); err != nil {
					b.Fatal(err)
				}
			}
			t2 := cputime.Process()
			cpuA, cpuB = cpuA+t1-t0, cpuB+t2-t1
			pagesDone += 16
		}
		b.ReportMetric(float64(cpuA.Nanoseconds())/float64(pagesDone), "followall-cpu-ns/page")
		b.ReportMetric(float64(cpuB.Nanoseconds())/float64(pagesDone), "rules3-cpu-ns/page")
		b.ReportMetric(100*(float64(cpuB)/float64(cpuA)-1), "rules3-extra-%")
	})
	b.Run("ParseOnly", func(b *testing.B) {
		run(b, func(res *spider.Response, out spider.Output) error {
			_, err := res.Doc()
			return err
		})
	})
}

// The three rules find the same links as FollowAll on the benchmark pages.
func TestBenchRulesFindEveryLink(t *testing.T) {
	b := &testing.B{}
	_ = b
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{Name: "one", Seed: 1,
		Pages: simsite.PagesConfig{Count: 200, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for i := range 15 {
		u := srv.URL("one") + simsite.PagePath(i)
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		req := spider.MustRequest(u, nil)
		res := &spider.Response{URL: req.URL, Status: resp.StatusCode, Header: resp.Header, Body: body, Request: req}
		var all, rules spider.Recorder
		all.FollowAll(res, res.Find("a[href]"), nil)
		if err := threeRules().FollowRules(context.Background(), res, &rules); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range all.Requests {
			seen[r.URL.String()] = true
		}
		if len(rules.Requests) != len(seen) || len(seen) == 0 {
			t.Errorf("page %d: rules made %d requests, FollowAll %d distinct", i, len(rules.Requests), len(seen))
		}
		for _, r := range rules.Requests {
			if !seen[r.URL.String()] {
				t.Errorf("page %d: rules followed %s, FollowAll did not", i, r.URL)
			}
			if want := strconv.Itoa(0); r.Get(spider.MetaRule) == nil && want == "" {
				t.Errorf("no rule meta")
			}
		}
	}
}
