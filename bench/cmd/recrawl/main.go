// Command recrawl measures what a recrawl of an unchanged site costs
// against its first crawl, from the server side: it serves a site of
// -pages pages (a binary tree of links from /p/0, every page with an
// ETag and a Last-Modified, -padding bytes of text each) on 127.0.0.1,
// crawls it to the end with a JOBDIR, then recrawls the finished job
// (RECRAWL_ENABLED) and prints the bytes the server sent for each (status
// lines, headers and bodies) and their ratio.
//
//	cd bench && go run ./cmd/recrawl                  # 10,000 pages
//	cd bench && go run ./cmd/recrawl -pages 1000 -padding 20000
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/gocrawl/gocrawl/devtools/changesite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// treeSpider follows every link.
type treeSpider struct{ spider.Base }

func (*treeSpider) Name() string { return "tree" }

func (s *treeSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	out.FollowAll(res, doc.Find("a[href]"), s.Parse)
	return nil
}

func main() {
	pages := flag.Int("pages", 10000, "pages of the site")
	padding := flag.Int("padding", 4096, "bytes of text per page")
	flag.Parse()
	if err := run(*pages, *padding); err != nil {
		fmt.Fprintln(os.Stderr, "recrawl:", err)
		os.Exit(1)
	}
}

func run(pages, padding int) error {
	site := changesite.New(0, 0)
	for i := range pages {
		var links []int
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < pages {
				links = append(links, c)
			}
		}
		site.Set(i, changesite.Page{Validators: changesite.ETagAndLastModified, Links: links, Padding: padding})
	}
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir, err := os.MkdirTemp("", "recrawl-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sp := &treeSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/p/0"}}}

	crawl := func(recrawl bool) (time.Duration, error) {
		j, err := jobdir.Open(filepath.Join(dir, "job"), sp.Name(), jobdir.Options{})
		if err != nil {
			return 0, err
		}
		defer j.Close()
		s := settings.New()
		if err := s.SetMap(map[string]any{"ROBOTSTXT_OBEY": false, "LOGSTATS_INTERVAL": 0, "DOWNLOAD_DELAY": 0,
			"CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 32, "RECRAWL_ENABLED": recrawl}, settings.SourceCommandLine, "bench"); err != nil {
			return 0, err
		}
		e, err := engine.New(sp, s, engine.Options{Job: j})
		if err != nil {
			return 0, err
		}
		res, err := e.Run(context.Background())
		if err != nil {
			return 0, err
		}
		if res.Reason != "finished" {
			return 0, fmt.Errorf("crawl ended with %s", res.Reason)
		}
		return res.Elapsed, nil
	}

	d1, err := crawl(false)
	if err != nil {
		return err
	}
	first, firstReqs := site.Bytes(), site.Requests.Load()
	site.Reset()
	d2, err := crawl(true)
	if err != nil {
		return err
	}
	again, againReqs := site.Bytes(), site.Requests.Load()
	fmt.Printf("pages %d, padding %d bytes\n", pages, padding)
	fmt.Printf("first crawl: %d requests, %d bytes sent, %v\n", firstReqs, first, d1.Round(time.Millisecond))
	fmt.Printf("recrawl:     %d requests, %d answered 304, %d bytes sent, %v\n", againReqs, site.NotModified.Load(), again, d2.Round(time.Millisecond))
	fmt.Printf("recrawl / first crawl: %.2f %% of the bytes\n", 100*float64(again)/float64(first))
	return nil
}
