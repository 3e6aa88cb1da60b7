package sitemapspider_test

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/crawltest"
	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/examples/sitemapspider"
)

func TestCrawlsDemoBooksFromSitemaps(t *testing.T) {
	srv := httptest.NewServer(demosite.Books())
	defer srv.Close()
	for _, tt := range []struct {
		name  string
		since string
		job   bool
	}{
		{"every book", "", false},
		{"books changed since April", "2024-04-01", false},
		{"with JOBDIR", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sp := sitemapspider.New()
			args := map[string]string{"start_urls": srv.URL + "/"}
			if tt.since != "" {
				args["since"] = tt.since
			}
			if err := sp.SetArgs(args); err != nil {
				t.Fatal(err)
			}
			var opts crawltest.Options
			if tt.job {
				opts.JobDir = filepath.Join(t.TempDir(), "job")
			}
			res := crawltest.Run(t, sp, opts)
			want := map[string]demosite.Book{}
			since, _ := time.Parse("2006-01-02", tt.since)
			for _, b := range demosite.BookList() {
				if !demosite.BookLastMod(b).Before(since) {
					want[b.UPC] = b
				}
			}
			if tt.since != "" && (len(want) == 0 || len(want) == 60) {
				t.Fatalf("since %s selects %d books: a poor test", tt.since, len(want))
			}
			got := map[string]bool{}
			for _, it := range res.Items {
				b := it.(sitemapspider.Book)
				w, ok := want[b.UPC]
				if !ok || got[b.UPC] || b.Title != w.Title || b.Price != w.PriceText() || !strings.HasPrefix(b.URL, srv.URL+"/catalogue/") {
					t.Errorf("unexpected or duplicate item %+v", b)
				}
				got[b.UPC] = true
			}
			if len(got) != len(want) {
				t.Errorf("got %d books, want %d", len(got), len(want))
			}
			// robots.txt twice (the middleware's and the spider's), the
			// index, its two sitemaps and the books: no list page.
			if n := res.Stats["downloader/response_count"]; int(n) != 2+3+len(want) {
				t.Errorf("%v responses, want %d", n, 2+3+len(want))
			}
			if res.Stats["sitemap/sitemapindex"] != 1 || res.Stats["sitemap/urlset"] != 2 || res.Stats["sitemap/robots"] != 1 {
				t.Errorf("sitemap stats: %v", res.Stats)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	for args, want := range map[string]string{
		"":                                   "pass the site",
		"start_urls=ftp://x/":                "start_urls",
		"start_urls=http://a/,since=May 1st": "since",
		"start_urls=http://a/,other=1":       `unknown argument "other"`,
	} {
		m := map[string]string{}
		for kv := range strings.SplitSeq(args, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		err := sitemapspider.New().SetArgs(m)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", args, err, want)
		}
	}
}
