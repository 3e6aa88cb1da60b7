package feed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

// TestCrawlExportsEveryItem runs a real crawl (spider -> engine ->
// downloader -> callback -> items -> exporters) against a local site and
// checks that every page lands once in each export, under the race detector.
func TestCrawlExportsEveryItem(t *testing.T) {
	const pages = 60
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil || i >= pages {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><head><title>page %d</title></head><body>", i)
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < pages {
				fmt.Fprintf(w, `<a href="/p/%d">%d</a>`, c, c)
			}
		}
		fmt.Fprint(w, "</body></html>")
	}))
	defer srv.Close()

	sp := follow.New()
	if err := sp.SetArgs(map[string]string{"start_urls": srv.URL + "/p/0"}); err != nil {
		t.Fatal(err)
	}
	s, err := settings.Load(settings.LoadOptions{NoFile: true, Overrides: []string{"CONCURRENT_REQUESTS_PER_DOMAIN=8", "ROBOTSTXT_OBEY=false"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var exs []*feed.Exporter
	for _, name := range []string{"items.jsonl", "items.json", "items.csv"} {
		ex, err := feed.New(filepath.Join(dir, name), feed.Options{Overwrite: true})
		if err != nil {
			t.Fatal(err)
		}
		exs = append(exs, ex)
	}
	e, err := engine.New(sp, s, engine.Options{Pipelines: feed.Pipelines(exs...)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "finished" || int(res.Stats["item_scraped_count"]) != pages {
		t.Fatalf("reason %s, %v items scraped, want %d", res.Reason, res.Stats["item_scraped_count"], pages)
	}
	for _, ex := range exs {
		if ex.Items() != pages {
			t.Errorf("%s: %d items written, want %d", ex.Path(), ex.Items(), pages)
		}
	}

	var fromJSONL, fromJSON []follow.Page
	b, _ := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var p follow.Page
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("jsonl line %q: %v", l, err)
		}
		fromJSONL = append(fromJSONL, p)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "items.json"))
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatalf("items.json: %v", err)
	}
	for name, got := range map[string][]follow.Page{"jsonl": fromJSONL, "json": fromJSON} {
		titles := make([]string, 0, len(got))
		for _, p := range got {
			titles = append(titles, p.Title)
		}
		sort.Strings(titles)
		for i := 1; i < len(titles); i++ {
			if titles[i] == titles[i-1] {
				t.Errorf("%s: %q exported twice", name, titles[i])
			}
		}
		if len(titles) != pages {
			t.Errorf("%s: %d items, want %d", name, len(titles), pages)
		}
	}
	b, _ = os.ReadFile(filepath.Join(dir, "items.csv"))
	if lines := strings.Count(string(b), "\n"); lines != pages+1 {
		t.Errorf("items.csv has %d lines, want header + %d", lines, pages)
	}
}
