package render_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

// jsSite is a site whose links exist only after its scripts ran. /a also
// fetches five resources from its host, and /crash exhausts the
// renderer's memory. cur and peak count requests in flight server-side.
type jsSite struct {
	cur, peak atomic.Int32
	srv       *httptest.Server
}

func newJSSite(t *testing.T) *jsSite {
	s := &jsSite{}
	links := func(to ...string) string {
		return `<script>for (const l of ` + fmt.Sprintf("%q", strings.Join(to, ",")) + `.split(",")) {
  const a = document.createElement("a"); a.href = l; a.textContent = l; document.body.appendChild(a);
}</script>`
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.cur.Add(1)
		defer s.cur.Add(-1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html")
		body := ""
		switch r.URL.Path {
		case "/":
			body = links("/a,/b,/crash,/c")
		case "/a":
			// The link to /d appears once the five fetches are done.
			body = `<script>Promise.all([0, 1, 2, 3, 4].map(i => fetch("/data/" + i))).then(() => {` +
				strings.TrimSuffix(strings.TrimPrefix(links("/d"), "<script>"), "</script>") + `})</script>`
		case "/crash":
			body = `<script>const hog = []; for (;;) hog.push(new Array(1e6).fill(Math.random()));</script>`
		case "/b", "/c", "/d":
		default:
			if !strings.HasPrefix(r.URL.Path, "/data/") {
				http.NotFound(w, r)
				return
			}
		}
		fmt.Fprintf(w, "<html><head><title>%s</title></head><body>%s</body></html>", r.URL.Path, body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func crawl(t *testing.T, site *jsSite, render bool, kv ...any) ([]string, map[string]float64) {
	t.Helper()
	s := settings.New()
	set := map[string]any{"ROBOTSTXT_OBEY": false, "RETRY_ENABLED": false, "LOGSTATS_INTERVAL": 0,
		"CONCURRENT_REQUESTS_PER_DOMAIN": 1, "RENDER_TIMEOUT": 20}
	for i := 0; i < len(kv); i += 2 {
		set[kv[i].(string)] = kv[i+1]
	}
	for k, v := range set {
		if err := s.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	sp := follow.New()
	args := map[string]string{"start_urls": site.srv.URL + "/"}
	if render {
		args["render"] = "true"
	}
	if err := sp.SetArgs(args); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMap(sp.Settings(), settings.SourceSpider, "follow"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var urls []string
	collect := pipeline.Func(func(ctx context.Context, item any) (any, error) {
		mu.Lock()
		urls = append(urls, strings.TrimPrefix(item.(follow.Page).URL, site.srv.URL))
		mu.Unlock()
		return item, nil
	})
	e, err := engine.New(sp, s, engine.Options{Pipelines: []pipeline.Named{{Name: "collect", Stage: collect}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(urls)
	return urls, res.Stats
}

// A crawl through rendered pages: links built by scripts are followed, a
// page that crashes its renderer fails alone and the crawl goes on, and
// with CONCURRENT_REQUESTS_PER_DOMAIN 1 the pages and their subresources
// never overlap at the server (a page frees its slot once its document
// has loaded, so its own subresources are not blocked by it).
func TestCrawlRenderedSite(t *testing.T) {
	site := newJSSite(t)
	urls, _ := crawl(t, site, false)
	if !slices.Equal(urls, []string{"/"}) {
		t.Fatalf("plain HTTP crawl found %v; the links exist only after scripts ran", urls)
	}
	site.peak.Store(0)
	urls, st := crawl(t, site, true, "RENDER_BROWSER_ARGS", []any{"--js-flags=--max-old-space-size=32"},
		"RENDER_WAIT", "networkidle", "ROBOTSTXT_OBEY", true)
	if want := []string{"/", "/a", "/b", "/c", "/d"}; !slices.Equal(urls, want) {
		t.Errorf("rendered crawl found %v, want %v", urls, want)
	}
	if n := st["downloader/exception_type_count/RendererCrashedError"]; n != 1 {
		t.Errorf("RendererCrashedError count %v, want 1 (the /crash page); stats: %v", n, st)
	}
	if st["render/renderer_crashes"] != 1 {
		t.Errorf("render/renderer_crashes = %v", st["render/renderer_crashes"])
	}
	if st["render/subresources/admitted"] < 5 {
		t.Errorf("render/subresources/admitted = %v, want at least the 5 fetches of /a", st["render/subresources/admitted"])
	}
	if p := site.peak.Load(); p > 1 {
		t.Errorf("the server saw %d requests at once; CONCURRENT_REQUESTS_PER_DOMAIN is 1", p)
	}
	// robots.txt is fetched over plain HTTP, never rendered.
	if st["render/requests"] != 6 || st["downloader/response_status_count/404"] != 1 {
		t.Errorf("render/requests = %v, want 6 pages (robots.txt, a 404, not rendered); stats %v", st["render/requests"], st)
	}
}
