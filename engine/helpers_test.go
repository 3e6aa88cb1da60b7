package engine

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/syncbuf"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// testSettings returns settings for a local crawl: no robots.txt, no
// retries (when the retry middleware is present), plus kv pairs.
func testSettings(t *testing.T, kv ...any) *settings.Settings {
	t.Helper()
	s := settings.New()
	set := func(name string, v any) {
		if _, ok := settings.Lookup(name); !ok {
			return
		}
		if err := s.Set(name, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	set("ROBOTSTXT_OBEY", false)
	set("RETRY_ENABLED", false)
	set("LOGSTATS_INTERVAL", 0)
	for i := 0; i < len(kv); i += 2 {
		name := kv[i].(string)
		if _, ok := settings.Lookup(name); !ok {
			t.Fatalf("unknown setting %s", name)
		}
		set(name, kv[i+1])
	}
	return s
}

func testLogger() (zerolog.Logger, *syncbuf.Buffer) {
	buf := &syncbuf.Buffer{}
	return zerolog.New(buf).Level(zerolog.DebugLevel), buf
}

// gauge counts requests in flight on a server.
type gauge struct {
	mu          sync.Mutex
	perKeyCur   map[string]int
	perKeyPeak  map[string]int
	perKeyTotal map[string]int
}

func newGauge() *gauge {
	return &gauge{perKeyCur: map[string]int{}, perKeyPeak: map[string]int{}, perKeyTotal: map[string]int{}}
}

func (g *gauge) enter(key string) {
	g.mu.Lock()
	g.perKeyTotal[key]++
	g.perKeyCur[key]++
	g.perKeyPeak[key] = max(g.perKeyPeak[key], g.perKeyCur[key])
	g.mu.Unlock()
}

func (g *gauge) leave(key string) {
	g.mu.Lock()
	g.perKeyCur[key]--
	g.mu.Unlock()
}

// waitUntilKey holds the caller (a handler) until key has n requests in
// flight or 50 ms pass: this pushes the crawler to its limits without
// making the test depend on timing (the assertions are on counts).
func (g *gauge) waitUntilKey(key string, n int) {
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
		g.mu.Lock()
		c := g.perKeyCur[key]
		g.mu.Unlock()
		if c >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// stats returns the peak number of requests in flight for key and the
// total number of requests counted under key.
func (g *gauge) stats(key string) (peak, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.perKeyPeak[key], g.perKeyTotal[key]
}

// pageHandler serves /p/<i> pages: HTML whose title is "Page <i>".
func pageHTML(i int, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>Page %d</title></head><body>", i)
	for _, l := range links {
		fmt.Fprintf(&b, `<a href="%s">x</a>`, l)
	}
	b.WriteString("</body></html>")
	return b.String()
}

// hostTransport sends every request to addr (a 127.0.0.1 listener), whatever
// the URL's host, so tests can crawl several host names without DNS.
func hostTransport(t *testing.T, addr string) *http.Transport {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: 64,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func startServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// urlsSpider starts from urls and records the title of each page.
type urlsSpider struct {
	spider.Base
	mu     sync.Mutex
	titles map[string]int
	follow bool
	onPage func(ctx context.Context, res *spider.Response) error
}

func newURLsSpider(urls ...string) *urlsSpider {
	return &urlsSpider{Base: spider.Base{StartURLs: urls}, titles: map[string]int{}}
}

func (*urlsSpider) Name() string { return "urls" }

func (s *urlsSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	if s.onPage != nil {
		if err := s.onPage(ctx, res); err != nil {
			return err
		}
	}
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	title := doc.Find("title").Text()
	s.mu.Lock()
	s.titles[title]++
	s.mu.Unlock()
	out.Item(map[string]any{"title": title, "url": res.URL.String()})
	if s.follow {
		out.FollowAll(res, doc.Find("a[href]"), s.Parse)
	}
	return nil
}

func (s *urlsSpider) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.titles {
		n += c
	}
	return n
}

// waitFor polls cond every millisecond and fails the test if it is still
// false after 10 s (a hang, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkGoroutines fails the test if goroutines started during it are still
// running once its cleanups have run (servers closed, crawl finished).
// Register it first so that it runs last.
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Errorf("goroutines leaked: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:n])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func urlsOf(base string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/p/%d", base, i)
	}
	return out
}
