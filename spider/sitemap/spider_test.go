package sitemap_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/internal/callbacks"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/syncbuf"
	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spider/sitemap"
)

// shop is a sitemap spider as users write one.
type shop struct {
	sitemap.Spider
}

func (*shop) Name() string { return "shop" }

func (s *shop) ParseProduct(ctx context.Context, res *spider.Response, out spider.Output) error {
	return nil
}

func (s *shop) Parse(ctx context.Context, res *spider.Response, out spider.Output) error { return nil }

func newShop() *shop {
	s := &shop{}
	s.SitemapURLs = []string{"https://shop.example/robots.txt", "https://shop.example/sitemap.xml", "javascript:alert(1)"}
	s.Rules = []sitemap.Rule{
		{Pattern: regexp.MustCompile(`/product/`), Callback: s.ParseProduct},
		{Pattern: regexp.MustCompile(`/page/`)}, // to Parse
	}
	return s
}

// crawl is a context with a crawler whose log and stats the test reads.
type crawl struct {
	ctx   context.Context
	log   *syncbuf.Buffer
	stats *stats.Collector
}

func newCrawl(t *testing.T, set map[string]any) *crawl {
	t.Helper()
	c := &crawl{log: &syncbuf.Buffer{}, stats: stats.New()}
	st := settings.New()
	for k, v := range set {
		if err := st.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	c.ctx = spider.WithCrawler(context.Background(), &spider.Crawler{Settings: st, Stats: c.stats, Log: zerolog.New(c.log)})
	return c
}

func sitemapResponse(req *spider.Request, ctype string, body []byte) *spider.Response {
	return &spider.Response{URL: req.URL, Status: 200, Request: req, Body: body, Header: http.Header{"Content-Type": {ctype}}}
}

func TestStart(t *testing.T) {
	s := newShop()
	s.StartURLs = []string{"https://shop.example/"}
	c := newCrawl(t, map[string]any{"SITEMAP_MAX_SIZE": 1000})
	var got []string
	var errs int
	for req, err := range s.Start(c.ctx) {
		if err != nil {
			errs++
			if !strings.Contains(err.Error(), "javascript:alert(1)") {
				t.Errorf("error %v does not name the URL", err)
			}
			continue
		}
		name, _ := callbacks.FuncName(s, req.Callback)
		if name == "" {
			name = "Parse"
		}
		ebName, _ := callbacks.FuncName(s, req.Errback)
		got = append(got, fmt.Sprintf("%s %s %s %v %v", req.URL, name, ebName, req.Get(sitemap.MetaDepth), req.Get(downloader.MetaDownloadMaxSize)))
	}
	want := []string{
		"https://shop.example/robots.txt ParseSitemap SitemapError 0 1000",
		"https://shop.example/sitemap.xml ParseSitemap SitemapError 0 1000",
		"https://shop.example/ Parse  <nil> <nil>",
	}
	if !slices.Equal(got, want) || errs != 1 {
		t.Errorf("start requests:\n got %q\nwant %q\nerrors %d", got, want, errs)
	}
}

func requestsOf(t *testing.T, s *shop, out *spider.Recorder) []string {
	t.Helper()
	var got []string
	for _, r := range out.Requests {
		name, err := callbacks.FuncName(s, r.Callback)
		if err != nil {
			t.Fatal(err)
		}
		if name == "" {
			name = "Parse"
		}
		d := ""
		if v := r.Get(sitemap.MetaDepth); v != nil {
			d = fmt.Sprintf(" depth=%v", v)
		}
		got = append(got, r.URL.String()+" "+name+d)
	}
	return got
}

func TestParseSitemapRobots(t *testing.T) {
	s := newShop()
	c := newCrawl(t, nil)
	req := spider.MustRequest("https://shop.example/robots.txt", nil)
	body := "User-agent: *\nDisallow: /admin\n# Sitemap: https://shop.example/commented.xml\nSITEMAP: /sitemap_index.xml\n" +
		"Crawl-delay: nonsense\nSitemap: https://cdn.example/s.xml.gz # trailing comment\nSitemap: mailto:x@y\nsitemap:https://shop.example/sitemap_index.xml\n"
	var out spider.Recorder
	if err := s.ParseSitemap(c.ctx, sitemapResponse(req, "text/plain", []byte(body)), &out); err != nil {
		t.Fatal(err)
	}
	want := []string{"https://shop.example/sitemap_index.xml ParseSitemap depth=0", "https://cdn.example/s.xml.gz ParseSitemap depth=0"}
	if got := requestsOf(t, s, &out); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

const index = `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://shop.example/sitemap_index.xml</loc></sitemap>
<sitemap><loc>https://shop.example/products.xml.gz</loc><lastmod>2020-01-01</lastmod></sitemap>
<sitemap><loc>https://shop.example/pages.xml</loc></sitemap>
<sitemap><loc>javascript:alert(1)</loc></sitemap>
</sitemapindex>`

func TestParseSitemapIndex(t *testing.T) {
	tests := []struct {
		name   string
		depth  int
		follow []*regexp.Regexp
		want   []string
		log    string
	}{
		{"follows all but itself", 0, nil, []string{"https://shop.example/products.xml.gz ParseSitemap depth=1", "https://shop.example/pages.xml ParseSitemap depth=1"}, "sitemap index lists itself"},
		{"follow patterns", 1, []*regexp.Regexp{regexp.MustCompile(`products`)}, []string{"https://shop.example/products.xml.gz ParseSitemap depth=2"}, ""},
		{"at the depth limit", 3, nil, nil, "SITEMAP_MAX_DEPTH (3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop()
			s.Follow = tt.follow
			c := newCrawl(t, nil)
			req := spider.MustRequest("https://shop.example/sitemap_index.xml", nil).Set(sitemap.MetaDepth, tt.depth)
			var out spider.Recorder
			if err := s.ParseSitemap(c.ctx, sitemapResponse(req, "application/xml", []byte(index)), &out); err != nil {
				t.Fatal(err)
			}
			if got := requestsOf(t, s, &out); !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			if tt.log != "" && !strings.Contains(c.log.String(), tt.log) {
				t.Errorf("log lacks %q:\n%s", tt.log, c.log)
			}
			for _, r := range out.Requests {
				if r.Get(downloader.MetaDownloadMaxSize) != int64(sitemap.DefaultMaxSize) {
					t.Errorf("%s: download_maxsize %v", r.URL, r.Get(downloader.MetaDownloadMaxSize))
				}
			}
		})
	}
}

const pages = `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
<url><loc>https://shop.example/product/1</loc><lastmod>2024-06-01</lastmod>
  <xhtml:link rel="alternate" hreflang="fr" href="https://shop.example/fr/product/1"/></url>
<url><loc>https://shop.example/product/2</loc><lastmod>2023-01-01</lastmod></url>
<url><loc>https://shop.example/page/about</loc></url>
<url><loc>https://shop.example/other</loc></url>
<url><loc>mailto:sales@shop.example</loc></url>
<url><loc>data:text/html,hi</loc></url>
</urlset>`

func TestParseSitemapPages(t *testing.T) {
	tests := []struct {
		name  string
		setup func(s *shop)
		want  []string
	}{
		{"rules: first match wins, no match skipped", nil, []string{
			"https://shop.example/product/1 ParseProduct", "https://shop.example/product/2 ParseProduct", "https://shop.example/page/about Parse"}},
		{"no rules: every page to Parse", func(s *shop) { s.Rules = nil }, []string{
			"https://shop.example/product/1 Parse", "https://shop.example/product/2 Parse", "https://shop.example/page/about Parse", "https://shop.example/other Parse"}},
		{"since: older pages skipped, undated kept", func(s *shop) { s.Since = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) }, []string{
			"https://shop.example/product/1 ParseProduct", "https://shop.example/page/about Parse"}},
		{"alternate links", func(s *shop) { s.AlternateLinks = true }, []string{
			"https://shop.example/product/1 ParseProduct", "https://shop.example/fr/product/1 ParseProduct",
			"https://shop.example/product/2 ParseProduct", "https://shop.example/page/about Parse"}},
		{"filter", func(s *shop) {
			s.Filter = func(k sitemap.Kind, e sitemap.Entry) bool {
				return k == sitemap.URLSet && !strings.HasSuffix(e.Loc, "/2")
			}
		}, []string{"https://shop.example/product/1 ParseProduct", "https://shop.example/page/about Parse"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop()
			if tt.setup != nil {
				tt.setup(s)
			}
			c := newCrawl(t, nil)
			req := spider.MustRequest("https://shop.example/pages.xml", nil).Set(sitemap.MetaDepth, 1)
			req.Depth = 2
			var out spider.Recorder
			if err := s.ParseSitemap(c.ctx, sitemapResponse(req, "text/xml", []byte(pages)), &out); err != nil {
				t.Fatal(err)
			}
			if got := requestsOf(t, s, &out); !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			for _, r := range out.Requests {
				if r.Depth != 3 || r.Get(sitemap.MetaDepth) != nil || r.Errback != nil {
					t.Errorf("%s: depth %d meta %v", r.URL, r.Depth, r.Meta)
				}
			}
		})
	}
}

func TestParseSitemapLimitsAndErrors(t *testing.T) {
	var many strings.Builder
	many.WriteString("<urlset>")
	for i := range 30 {
		fmt.Fprintf(&many, "<url><loc>https://shop.example/page/%d</loc></url>", i)
	}
	many.WriteString("</urlset>")
	tests := []struct {
		name     string
		set      map[string]any
		body     string
		requests int
		err      string
		log      string
		stat     string
	}{
		{"too many URLs", map[string]any{"SITEMAP_MAX_URLS": 10}, many.String(), 10, "", "SITEMAP_MAX_URLS (10)", "sitemap/limit/urls"},
		{"too large", map[string]any{"SITEMAP_MAX_SIZE": 500}, many.String(), 10, "", "larger than SITEMAP_MAX_SIZE", "sitemap/limit/size"},
		{"cut short", nil, many.String()[:400], strings.Count(many.String()[:400], "</url>"), "line 1: unexpected end of file", "", "sitemap/malformed"},
		{"not a sitemap", nil, "<html><body>Not found</body></html>", 0, "the root element is <html>", "", "sitemap/not_sitemap"},
		{"empty", nil, "", 0, "empty file", "", "sitemap/malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newShop()
			c := newCrawl(t, tt.set)
			req := spider.MustRequest("https://shop.example/pages.xml", nil)
			var out spider.Recorder
			err := s.ParseSitemap(c.ctx, sitemapResponse(req, "text/xml", []byte(tt.body)), &out)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), req.URL.String())) {
				t.Errorf("err = %v, want %q naming the sitemap", err, tt.err)
			}
			if len(out.Requests) != tt.requests {
				t.Errorf("%d requests, want %d", len(out.Requests), tt.requests)
			}
			if tt.log != "" && (!strings.Contains(c.log.String(), tt.log) || !strings.Contains(c.log.String(), req.URL.String())) {
				t.Errorf("log lacks %q and the URL:\n%s", tt.log, c.log)
			}
			if c.stats.Get(tt.stat) != 1 {
				t.Errorf("stat %s = %v", tt.stat, c.stats.Get(tt.stat))
			}
		})
	}
}

func TestSitemapError(t *testing.T) {
	s := newShop()
	c := newCrawl(t, nil)
	req := spider.MustRequest("https://shop.example/huge.xml", nil)
	tooLarge := &downloader.Error{Kind: errkind.ResponseTooLarge, URL: req.URL.String(), Err: errors.New("body exceeds the maximum size")}
	if err := s.SitemapError(c.ctx, req, tooLarge, &spider.Recorder{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.log.String(), "larger than SITEMAP_MAX_SIZE") || c.stats.Get("sitemap/limit/size") != 1 {
		t.Errorf("log %s", c.log)
	}
	if err := s.SitemapError(c.ctx, req, errors.New("ignored response 404"), &spider.Recorder{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.log.String(), "sitemap not fetched") || c.stats.Get("sitemap/not_fetched") != 1 {
		t.Errorf("log %s", c.log)
	}
	timeout := &downloader.Error{Kind: errkind.DownloadTimeout, URL: req.URL.String(), Err: errors.New("timeout")}
	if err := s.SitemapError(c.ctx, req, timeout, &spider.Recorder{}); err != nil || strings.Count(c.log.String(), "\n") != 2 {
		t.Errorf("a download error is logged by the engine, not again here: %v\n%s", err, c.log)
	}
}

// The embedded Spider's own Parse says what is missing.
func TestDefaultParse(t *testing.T) {
	var s sitemap.Spider
	req := spider.MustRequest("https://shop.example/p", nil)
	err := s.Parse(context.Background(), sitemapResponse(req, "text/html", nil), &spider.Recorder{})
	if err == nil || !strings.Contains(err.Error(), "define a Parse method") {
		t.Errorf("err = %v", err)
	}
}

func TestRobotsTxt(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/shop/?x=1": "https://example.com/robots.txt",
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080/robots.txt",
		"not a url":                     "not a url",
	} {
		if got := sitemap.RobotsTxt(in); got != want {
			t.Errorf("RobotsTxt(%q) = %q, want %q", in, got, want)
		}
	}
}

// Page requests carry their <lastmod> and <changefreq>: hints for a
// revisit schedule.
func TestPageRequestHints(t *testing.T) {
	const set = `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://shop.example/product/1</loc><lastmod>2024-06-01</lastmod><changefreq>Daily</changefreq></url>
<url><loc>https://shop.example/product/2</loc></url>
</urlset>`
	s := newShop()
	s.Rules = nil
	c := newCrawl(t, nil)
	req := spider.MustRequest("https://shop.example/pages.xml", nil).Set(sitemap.MetaDepth, 1)
	var out spider.Recorder
	if err := s.ParseSitemap(c.ctx, sitemapResponse(req, "text/xml", []byte(set)), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Requests) != 2 {
		t.Fatalf("%d requests, want 2", len(out.Requests))
	}
	r1, r2 := out.Requests[0], out.Requests[1]
	if r1.Get(spider.MetaSitemapLastMod) != "2024-06-01T00:00:00Z" || r1.Get(spider.MetaSitemapChangeFreq) != "daily" {
		t.Errorf("product/1: meta %v", r1.Meta)
	}
	if r2.Get(spider.MetaSitemapLastMod) != nil || r2.Get(spider.MetaSitemapChangeFreq) != nil {
		t.Errorf("product/2 has no hints but meta %v", r2.Meta)
	}
}
