package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// linkSite serves n pages; page i links to pages 2i+1 and 2i+2.
func linkSite(t *testing.T, n int) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i >= n {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>Page %d</title></head><body>", i)
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < n {
				fmt.Fprintf(&b, `<a href="/p/%d">%d</a>`, c, c)
			}
		}
		b.WriteString("</body></html>")
		fmt.Fprint(w, b.String())
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type treeSpider struct {
	spider.Base
	mu     sync.Mutex
	titles map[string]bool
}

func (*treeSpider) Name() string { return "tree" }

func (s *treeSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	title := doc.Find("title").Text()
	s.mu.Lock()
	s.titles[title] = true
	s.mu.Unlock()
	out.Item(map[string]any{"title": title, "url": res.URL.String()})
	out.FollowAll(res, doc.Find("a[href]"), s.Parse)
	return nil
}

func TestCrawlFollowsLinksOnce(t *testing.T) {
	srv := linkSite(t, 100)
	s := settings.New()
	if err := s.Set("ROBOTSTXT_OBEY", false, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	sp := &treeSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/p/0"}}, titles: map[string]bool{}}
	e, err := New(sp, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "finished" {
		t.Errorf("reason = %q, want finished", res.Reason)
	}
	if len(sp.titles) != 100 {
		t.Errorf("crawled %d distinct pages, want 100", len(sp.titles))
	}
	if got := res.Stats["item_scraped_count"]; got != 100 {
		t.Errorf("item_scraped_count = %v, want 100", got)
	}
	if got := res.Stats["downloader/response_status_count/200"]; got != 100 {
		t.Errorf("200 responses = %v, want 100", got)
	}
}
