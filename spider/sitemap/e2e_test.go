package sitemap_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/crawltest"
	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spider/sitemap"
)

// pageSpider is a sitemap spider whose pages emit their path.
type pageSpider struct{ sitemap.Spider }

func (*pageSpider) Name() string { return "pages" }

func (s *pageSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.Item(res.URL.Path)
	return nil
}

func TestDemoQuotesSitemap(t *testing.T) {
	srv := httptest.NewServer(demosite.Quotes())
	defer srv.Close()
	s := &pageSpider{}
	s.SitemapURLs = []string{sitemap.RobotsTxt(srv.URL)}
	res := crawltest.Run(t, s, crawltest.Options{})
	var got []string
	for _, it := range res.Items {
		got = append(got, it.(string))
	}
	want := demosite.QuotesSitemapPaths()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("pages:\n got %q\nwant %q", got, want)
	}
}

func gzipBytes(t *testing.T, parts ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	for _, p := range parts {
		if _, err := io.WriteString(w, p); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return b.Bytes()
}

// hostileSite serves sitemaps meant to hurt: a 60 MB one, gzip bombs (as a
// .xml.gz file and as Content-Encoding), an index listing itself, an
// endless chain of indexes, 200,000 URLs in one file, links with other
// schemes and a file cut short. It counts the requests for each path.
type hostileSite struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
	bomb []byte
}

func newHostileSite(t *testing.T) *hostileSite {
	h := &hostileSite{t: t, hits: map[string]int{}}
	var spaces bytes.Buffer
	w, _ := gzip.NewWriterLevel(&spaces, gzip.BestSpeed)
	io.WriteString(w, "<urlset><url><loc>/p/bomb</loc></url>")
	chunk := strings.Repeat(" ", 1<<20)
	for range 64 {
		io.WriteString(w, chunk)
	}
	io.WriteString(w, "</urlset>")
	w.Close()
	h.bomb = spaces.Bytes()
	h.srv = httptest.NewServer(h)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostileSite) count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[path]
}

func (h *hostileSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hits[r.URL.Path]++
	h.mu.Unlock()
	base := "http://" + r.Host
	xml := func(body string) {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, body)
	}
	index := func(locs ...string) {
		var b strings.Builder
		b.WriteString("<sitemapindex>")
		for _, l := range locs {
			fmt.Fprintf(&b, "<sitemap><loc>%s</loc></sitemap>", l)
		}
		b.WriteString("</sitemapindex>")
		xml(b.String())
	}
	switch p := r.URL.Path; {
	case p == "/robots.txt":
		fmt.Fprintf(w, "User-agent: *\nAllow: /\nSitemap: /index.xml\nSitemap: %[1]s/huge.xml\nSitemap: %[1]s/bomb.xml.gz\n"+
			"Sitemap: %[1]s/bomb-encoded.xml\nSitemap: %[1]s/many.xml\nSitemap: %[1]s/cut.xml\nSitemap: %[1]s/missing.xml\n", base)
	case p == "/index.xml":
		index(base+"/index.xml", base+"/index2.xml", base+"/pages.xml.gz", base+"/deep/1.xml")
	case p == "/index2.xml":
		index(base+"/index.xml", base+"/pages.xml.gz")
	case strings.HasPrefix(p, "/deep/"):
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "/deep/"), ".xml"))
		index(fmt.Sprintf("%s/deep/%d.xml", base, n+1))
	case p == "/pages.xml.gz":
		w.Header().Set("Content-Type", "application/x-gzip")
		w.Write(gzipBytes(h.t, "<urlset>",
			"<url><loc>/p/1</loc></url><url><loc>", base, "/p/2</loc></url>",
			"<url><loc>javascript:alert(1)</loc></url><url><loc>mailto:a@b.c</loc></url>",
			"<url><loc>data:text/html;base64,PHNjcmlwdD4=</loc></url><url><loc>JavaScript:void(0)</loc></url>",
			"<url><loc>vbscript:x</loc></url><url><loc>http://</loc></url>", "</urlset>"))
	case p == "/huge.xml": // 60 MB, streamed
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, "<urlset><url><loc>/p/huge</loc></url>")
		pad := "<!--" + strings.Repeat("x", 60<<10) + "-->\n"
		for range 60 << 20 / len(pad) {
			if _, err := io.WriteString(w, pad); err != nil {
				return
			}
		}
		io.WriteString(w, "</urlset>")
	case p == "/bomb.xml.gz":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(h.bomb)
	case p == "/bomb-encoded.xml":
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(h.bomb)
	case p == "/many.xml":
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, "<urlset>")
		for i := range 200000 {
			fmt.Fprintf(w, "<url><loc>%s/p/many/%d</loc></url>\n", base, i)
		}
		io.WriteString(w, "</urlset>")
	case p == "/cut.xml":
		xml("<urlset><url><loc>/p/cut-1</loc></url><url><loc>/p/cut-2</loc></url><url><loc>/p/cu")
	case strings.HasPrefix(p, "/p/"):
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>page</body></html>")
	default:
		http.NotFound(w, r)
	}
}

// TestHostileSitemaps crawls hostileSite: every limit is hit and logged,
// every bad file is an error of its own, and the crawl finishes with the
// pages the sitemaps really list.
func TestHostileSitemaps(t *testing.T) {
	h := newHostileSite(t)
	s := &pageSpider{}
	s.SitemapURLs = []string{h.srv.URL + "/robots.txt"}
	// Pages of many.xml go to Parse only below 10: the others are
	// skipped after the URL limit was applied.
	s.Rules = []sitemap.Rule{{Pattern: regexp.MustCompile(`/p/(many/\d$|[^m])`)}}
	var log bytes.Buffer
	res := crawltest.Run(t, s, crawltest.Options{Log: &log, CallbackErrors: true,
		Settings: map[string]any{"ROBOTSTXT_OBEY": false, "LOG_LEVEL": "DEBUG"}})
	if res.Reason != "finished" {
		t.Fatalf("reason %s", res.Reason)
	}
	var pages []string
	for _, it := range res.Items {
		pages = append(pages, it.(string))
	}
	slices.Sort(pages)
	// What was read before a file's problem is used: /p/bomb and /p/cut-*.
	want := []string{"/p/1", "/p/2", "/p/bomb", "/p/cut-1", "/p/cut-2"}
	for i := range 10 {
		want = append(want, fmt.Sprintf("/p/many/%d", i))
	}
	slices.Sort(want)
	if !slices.Equal(pages, want) {
		t.Errorf("pages:\n got %q\nwant %q", pages, want)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/index.xml", 1}, {"/index2.xml", 1}, {"/pages.xml.gz", 1},
		{"/deep/1.xml", 1}, {"/deep/2.xml", 1}, {"/deep/3.xml", 1}, {"/deep/4.xml", 0},
	} {
		if got := h.count(c.path); got != c.want {
			t.Errorf("%s fetched %d times, want %d", c.path, got, c.want)
		}
	}
	for stat, want := range map[string]float64{
		"sitemap/limit/size":      2, // huge.xml cut by the download; bomb-encoded.xml by decompression
		"sitemap/limit/urls":      1,
		"sitemap/limit/depth":     1,
		"sitemap/self_reference":  1,
		"sitemap/malformed":       2, // bomb.xml.gz (one 64 MB token) and cut.xml
		"sitemap/not_fetched":     1, // missing.xml: 404
		"spider_exceptions/count": 2,
	} {
		if got := res.Stats[stat]; got != want {
			t.Errorf("%s = %v, want %v", stat, got, want)
		}
	}
	logs := log.String()
	for _, want := range []string{
		`"url":"` + h.srv.URL + `/huge.xml","limit":52428800,"message":"sitemap is larger than SITEMAP_MAX_SIZE`,
		`"url":"` + h.srv.URL + `/bomb-encoded.xml","limit":52428800,"message":"sitemap is larger than SITEMAP_MAX_SIZE`,
		`"url":"` + h.srv.URL + `/many.xml","limit":50000,"message":"sitemap lists more than SITEMAP_MAX_URLS (50000) entries`,
		`"url":"` + h.srv.URL + `/deep/3.xml","limit":3,"sitemaps":1,"message":"sitemap index nested deeper than SITEMAP_MAX_DEPTH (3)`,
		`"url":"` + h.srv.URL + `/index.xml","message":"sitemap index lists itself`,
		`sitemap ` + h.srv.URL + `/bomb.xml.gz: malformed sitemap: line 1: a tag, text or comment longer than 262144 bytes`,
		`sitemap ` + h.srv.URL + `/cut.xml: malformed sitemap: line 1: unexpected end of file`,
		`"url":"` + h.srv.URL + `/missing.xml","message":"sitemap not fetched"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("log:\n%s", logs)
	}
}
