package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	_ "github.com/gocrawl/gocrawl/pqueue/spillq" // the spill store, as cli programs link it
	"github.com/gocrawl/gocrawl/spider"
)

// orderSpider follows every link of a page, in page order, and records the
// pages in the order their callbacks run. Its callback is a method, so
// spilled requests can be encoded.
type orderSpider struct {
	spider.Base
	mu     sync.Mutex
	order  []string
	onPage func(n int)
	// done gets a token when a callback returns; the site waits for it
	// before serving the next page, so that callbacks never overlap and
	// the crawl's order is deterministic.
	done chan struct{}
}

func (*orderSpider) Name() string { return "order" }

func (s *orderSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	return s.Page(ctx, res, out)
}

// Page is the callback of followed links: a method other than Parse, so
// that spilled requests must find it again by name.
func (s *orderSpider) Page(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.order = append(s.order, res.URL.Path)
	n := len(s.order)
	s.mu.Unlock()
	if s.onPage != nil {
		s.onPage(n)
	}
	out.FollowAll(res, doc.Find("a[href]"), s.Page)
	s.done <- struct{}{}
	return nil
}

// fanoutSite serves n pages; page i links to pages 5i+1 .. 5i+5, so the
// frontier of a breadth-first crawl holds about 4/5 of the pages. Every
// page but the first is served once the previous page's callback is done
// (a token from done).
func fanoutSite(t *testing.T, n int, done func() chan struct{}) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i >= n {
			http.NotFound(w, r)
			return
		}
		if i > 0 {
			select {
			case <-done():
			case <-time.After(10 * time.Second):
				t.Errorf("page %d: the previous callback never finished", i)
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var links []string
		for c := 5*i + 1; c <= 5*i+5 && c < n; c++ {
			links = append(links, fmt.Sprintf("/p/%d", c))
		}
		fmt.Fprint(w, pageHTML(i, links...))
	})
	return startServer(t, mux).URL
}

// crawlOrder crawls the site with one request at a time and the given
// SCHEDULER_MEMORY_MAX_REQUESTS, spilling into spillDir.
// onPage, when set, is called with the number of pages crawled so far and
// stops the crawl when it returns true.
func crawlOrder(t *testing.T, site *spillSite, limit int, spillDir string, onPage func(n int) bool) (*orderSpider, *Result, string) {
	t.Helper()
	log, buf := testLogger()
	sp := site.spider()
	s := testSettings(t, "CONCURRENT_REQUESTS", 1, "SCHEDULER_MEMORY_MAX_REQUESTS", limit, "SCHEDULER_SPILL_DIR", spillDir)
	e, err := New(sp, s, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if onPage != nil {
		sp.onPage = func(n int) {
			if onPage(n) {
				e.Stop("test")
			}
		}
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sp, res, buf.String()
}

// spillSite is a fanoutSite and the spider crawling it now.
type spillSite struct {
	url  string
	mu   sync.Mutex
	done chan struct{}
}

func newSpillSite(t *testing.T, n int) *spillSite {
	site := &spillSite{}
	site.url = fanoutSite(t, n, func() chan struct{} {
		site.mu.Lock()
		defer site.mu.Unlock()
		return site.done
	})
	return site
}

// spider returns a new spider for the site, whose callbacks release its
// pages.
func (s *spillSite) spider() *orderSpider {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = make(chan struct{}, 1<<16)
	return &orderSpider{Base: spider.Base{StartURLs: []string{s.url + "/p/0"}}, done: s.done}
}

func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Fatalf("the spill folder was not removed: %s holds %s", dir, ents[0].Name())
	}
}

// TestSpilledCrawlVisitsEveryPageInOrder crawls a site whose frontier
// grows far past a tiny SCHEDULER_MEMORY_MAX_REQUESTS: every page is
// visited exactly once, in the same order as the crawl that keeps
// everything in memory, and the temporary folder is gone afterwards.
func TestSpilledCrawlVisitsEveryPageInOrder(t *testing.T) {
	const n = 400
	site := newSpillSite(t, n)
	dir := t.TempDir()
	mem, res, _ := crawlOrder(t, site, 0, dir, nil)
	if res.Reason != "finished" || len(mem.order) != n {
		t.Fatalf("in memory: %s after %d pages, want finished after %d", res.Reason, len(mem.order), n)
	}
	for _, limit := range []int{1, 7, 50} {
		t.Run(fmt.Sprint("limit=", limit), func(t *testing.T) {
			sp, res, log := crawlOrder(t, site, limit, dir, nil)
			if res.Reason != "finished" {
				t.Fatalf("reason %s", res.Reason)
			}
			seen := map[string]int{}
			for _, p := range sp.order {
				seen[p]++
			}
			if len(seen) != n || len(sp.order) != n {
				t.Fatalf("%d pages visited, %d distinct, want %d once each", len(sp.order), len(seen), n)
			}
			if !slices.Equal(sp.order, mem.order) {
				i := 0
				for i < n && sp.order[i] == mem.order[i] {
					i++
				}
				t.Fatalf("order differs from the in-memory crawl at page %d: %s, in memory %s", i, sp.order[i], mem.order[i])
			}
			if !strings.Contains(log, "further ones go to a temporary folder") || !strings.Contains(log, `"level":"info"`) {
				t.Fatalf("no INFO line about spilling in the log:\n%s", log)
			}
			emptyDir(t, dir)
		})
	}
}

// TestSpillFolderRemovedWhenStopped stops a crawl while most of its
// frontier is on disk: the folder is removed all the same.
func TestSpillFolderRemovedWhenStopped(t *testing.T) {
	site := newSpillSite(t, 400)
	dir := t.TempDir()
	var created bool
	sp, res, _ := crawlOrder(t, site, 3, dir, func(n int) bool {
		if n != 30 {
			return false
		}
		ents, _ := os.ReadDir(dir)
		created = len(ents) == 1 && strings.HasPrefix(ents[0].Name(), "gocrawl-spill-")
		return true
	})
	if len(sp.order) >= 400 {
		t.Fatalf("the crawl was not stopped early (%d pages, %s)", len(sp.order), res.Reason)
	}
	if !created {
		t.Fatal("no spill folder while the crawl ran: the test does not test spilling")
	}
	emptyDir(t, dir)
}

// TestSpillFailureStopsCrawl removes the spill folder's parent before the
// queue spills: the crawl stops with a storage error naming the folder,
// reason spill_error.
func TestSpillFailureStopsCrawl(t *testing.T) {
	site := newSpillSite(t, 400)
	dir := filepath.Join(t.TempDir(), "spill")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	log, _ := testLogger()
	sp := site.spider()
	s := testSettings(t, "CONCURRENT_REQUESTS", 1, "SCHEDULER_MEMORY_MAX_REQUESTS", 3, "SCHEDULER_SPILL_DIR", dir)
	e, err := New(sp, s, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if res == nil {
		t.Fatalf("no result: %v", err)
	}
	if res.Reason != "spill_error" || !errors.Is(err, pqueue.ErrStorage) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("reason %q, err %v; want spill_error and a storage error naming %s", res.Reason, err, dir)
	}
	if len(sp.order) >= 400 {
		t.Fatal("the crawl went on after the failure")
	}
}
