package crawlspider_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/crawltest"
	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/examples/crawlspider"
)

func books(t *testing.T, items []any) map[string]crawlspider.Book {
	t.Helper()
	got := map[string]crawlspider.Book{}
	for _, it := range items {
		b := it.(crawlspider.Book)
		if _, dup := got[b.UPC]; dup {
			t.Errorf("book %q emitted twice", b.Title)
		}
		got[b.UPC] = b
	}
	return got
}

func check(t *testing.T, got map[string]crawlspider.Book) {
	t.Helper()
	want := demosite.BookList()
	if len(got) != len(want) {
		t.Errorf("got %d books, want %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok := got[w.UPC]
		if !ok {
			t.Errorf("book %q missing", w.Title)
			continue
		}
		if g.Title != w.Title || fmt.Sprintf("£%.2f", g.Price) != w.PriceText() || g.Category != w.Category {
			t.Errorf("book %q: got %+v", w.Title, g)
		}
	}
}

func TestCrawlsDemoBooks(t *testing.T) {
	srv := httptest.NewServer(demosite.Books())
	defer srv.Close()
	sp := crawlspider.New()
	if err := sp.SetArgs(map[string]string{"start_urls": srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	res := crawltest.Run(t, sp, crawltest.Options{})
	check(t, books(t, res.Items))
	// Only list pages (1 + 2 more catalogue pages + 4 categories + 1 more
	// Mystery page) and the 60 books, each once, and robots.txt.
	if n := res.Stats["downloader/response_count"]; n != 1+8+60 {
		t.Errorf("%v responses", n)
	}
}

// The crawl pauses and resumes with JOBDIR: the rules' requests are
// persisted with their rule index and callback names.
func TestPauseAndResume(t *testing.T) {
	srv := httptest.NewServer(demosite.Books())
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "job")
	run := func(limit int) crawltest.Result {
		sp := crawlspider.New()
		if err := sp.SetArgs(map[string]string{"start_urls": srv.URL + "/"}); err != nil {
			t.Fatal(err)
		}
		return crawltest.Run(t, sp, crawltest.Options{JobDir: dir, Settings: map[string]any{
			"CLOSESPIDER_ITEMCOUNT": limit, "CONCURRENT_REQUESTS": 1}})
	}
	first := run(10)
	if first.Reason != "closespider_itemcount" || len(first.Items) < 10 || len(first.Items) >= 60 {
		t.Fatalf("first run: %s with %d items", first.Reason, len(first.Items))
	}
	second := run(0)
	if second.Reason != "finished" {
		t.Fatalf("second run: %s", second.Reason)
	}
	check(t, books(t, append(first.Items, second.Items...)))
}
