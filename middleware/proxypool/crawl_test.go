package proxypool_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/testproxy"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

// site serves /0 linking to /1 ... /n-1, and robots.txt. direct counts
// the requests that did not come through a test proxy.
type site struct {
	srv    *httptest.Server
	direct atomic.Int32
	pages  int
}

func newSite(t *testing.T, n int, handle func(w http.ResponseWriter, r *http.Request) bool) *site {
	s := &site{pages: n}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Proxy") == "" {
			s.direct.Add(1)
		}
		if handle != nil && handle(w, r) {
			return
		}
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><head><title>%s</title></head><body>", r.URL.Path)
		if r.URL.Path == "/0" {
			for i := 1; i < n; i++ {
				fmt.Fprintf(w, `<a href="/%d">%d</a>`, i, i)
			}
		}
		fmt.Fprint(w, "</body></html>")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func crawl(t *testing.T, s *site, kv map[string]any) (int, map[string]float64, string) {
	t.Helper()
	set := settings.New()
	base := map[string]any{"LOGSTATS_INTERVAL": 0, "RETRY_ENABLED": false, "CONCURRENT_REQUESTS": 4, "LOG_LEVEL": "DEBUG"}
	for k, v := range kv {
		base[k] = v
	}
	for k, v := range base {
		if err := set.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	sp := follow.New()
	if err := sp.SetArgs(map[string]string{"start_urls": s.srv.URL + "/0"}); err != nil {
		t.Fatal(err)
	}
	var items atomic.Int32
	count := pipeline.Func(func(ctx context.Context, item any) (any, error) {
		items.Add(1)
		return item, nil
	})
	logs := &logBuf{}
	e, err := engine.New(sp, set, engine.Options{Log: zerolog.New(logs).Level(zerolog.DebugLevel),
		Pipelines: []pipeline.Named{{Name: "count", Stage: count}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return int(items.Load()), res.Stats, logs.String()
}

func start(t *testing.T, p *testproxy.Proxy) *testproxy.Proxy {
	t.Helper()
	p, err := testproxy.Start(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// A crawl through a pool of four proxies: one needs credentials, one is
// down, one is refused by the site. Checked from the proxies' own
// logs and the site's: nothing reaches the site without a proxy (robots.txt
// included), the banned proxy gets nothing while it rests, every page is
// crawled, and the password appears in no log line and no stat.
func TestCrawlThroughProxyPool(t *testing.T) {
	const pass = "s3cret-pw"
	s := newSite(t, 40, nil)
	good := start(t, &testproxy.Proxy{Name: "good", User: "crawler", Pass: pass})
	good2 := start(t, &testproxy.Proxy{Name: "good2"})
	banned := start(t, &testproxy.Proxy{Name: "banned", BanStatus: http.StatusForbidden})
	dead := testproxy.Dead()
	t0 := time.Now()
	n, st, logs := crawl(t, s, map[string]any{
		// In turn: the first request meets the banned proxy, its retry the
		// dead one, and the good ones carry the rest.
		"PROXY_LIST":                    []any{banned.URL(), "http://crawler:" + pass + "@" + dead, good.URL(), good2.URL()},
		"PROXY_REST_MIN":                600,
		"CONCURRENT_REQUESTS_PER_PROXY": 1,
		"ROBOTSTXT_OBEY":                true,
	})
	if n != 40 {
		t.Errorf("%d pages crawled, want 40; stats %v", n, st)
	}
	t.Logf("crawl took %v; logs: good %d good2 %d banned %d", time.Since(t0), len(good.Log()), len(good2.Log()), len(banned.Log()))
	if d := s.direct.Load(); d != 0 {
		t.Errorf("%d requests reached the site without a proxy", d)
	}
	// The banned proxy: after its first refusal, nothing more (one
	// request at a time per proxy, so none was in flight either).
	var afterBan []testproxy.Entry
	refused := false
	for _, e := range banned.Log() {
		if refused {
			afterBan = append(afterBan, e)
		}
		if e.Status == http.StatusForbidden {
			refused = true
		}
	}
	if !refused || len(afterBan) > 0 {
		t.Errorf("banned proxy: refused=%v, %d requests while resting:\n%s", refused, len(afterBan), testproxy.Targets(afterBan))
	}
	label := strings.TrimPrefix(banned.URL(), "http://")
	if st["proxy/"+label+"/bans"] != 1 || st["proxy/"+dead+"/failures"] != 1 {
		t.Errorf("bans of %s: %v, failures of the dead %s: %v (want 1 and 1)", label, st["proxy/"+label+"/bans"], dead, st["proxy/"+dead+"/failures"])
	}
	if st["proxy/retries"] < 2 {
		t.Errorf("proxy/retries = %v; the refused and failed requests were retried on other proxies", st["proxy/retries"])
	}
	for _, p := range []*testproxy.Proxy{good, good2} {
		if len(p.Log()) < 10 {
			t.Errorf("proxy %s carried only %d requests", p.Name, len(p.Log()))
		}
		for _, e := range p.Log() {
			if e.Status == http.StatusProxyAuthRequired {
				t.Errorf("proxy %s refused credentials for %s", p.Name, e.Target)
			}
		}
	}
	if strings.Contains(logs, pass) {
		t.Errorf("the proxy password appears in the logs")
	}
	for k, v := range st {
		if strings.Contains(k, pass) || strings.Contains(k, "crawler:") || strings.Contains(fmt.Sprint(v), pass) {
			t.Errorf("stat %s shows credentials", k)
		}
	}
	if !strings.Contains(logs, "proxy refused; it rests") || !strings.Contains(logs, "proxy failed; it rests") {
		t.Errorf("the logs do not tell about the ban and the failure")
	}
}

// Every proxy refused and resting: requests wait in the queue instead of
// going out directly.
func TestAllProxiesRestingSendsNothingDirect(t *testing.T) {
	s := newSite(t, 3, nil)
	banned := start(t, &testproxy.Proxy{Name: "banned", BanStatus: http.StatusTooManyRequests})
	start := time.Now()
	n, st, _ := crawl(t, s, map[string]any{
		"PROXY_LIST": []any{banned.URL()}, "PROXY_REST_MIN": 1, "PROXY_REST_MAX": 1, "PROXY_RETRY_TIMES": 2,
		"ROBOTSTXT_OBEY": false, "BACKOFF_MIN_DELAY": 0.1, "BACKOFF_MAX_DELAY": 0.2,
	})
	if s.direct.Load() != 0 || n != 0 {
		t.Errorf("%d direct requests, %d pages: want none", s.direct.Load(), n)
	}
	if got := len(banned.Log()); got != 3 {
		t.Errorf("the proxy saw %d requests, want 3 (the first try and 2 retries)", got)
	}
	if st["proxy/all_resting"] < 1 || time.Since(start) < 2*time.Second {
		t.Errorf("proxy/all_resting = %v after %v; retries should have waited for the rests", st["proxy/all_resting"], time.Since(start))
	}
}

// Sessions and proxies together: a session keeps its proxy while the proxy
// works (the site sees each visitor from one proxy), and a session whose
// proxy is refused is retired with it.
func TestSessionsKeepTheirProxy(t *testing.T) {
	var mu sync.Mutex
	via := map[string]map[string]bool{} // visitor -> proxies it came through
	next := 0
	s := newSite(t, 30, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/robots.txt" {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		id := ""
		if c, err := r.Cookie("visitor"); err == nil {
			id = c.Value
		} else {
			next++
			id = fmt.Sprint("v", next)
			http.SetCookie(w, &http.Cookie{Name: "visitor", Value: id, Path: "/"})
		}
		if via[id] == nil {
			via[id] = map[string]bool{}
		}
		via[id][r.Header.Get("X-Test-Proxy")] = true
		return false
	})
	banned := start(t, &testproxy.Proxy{Name: "banned", BanStatus: http.StatusForbidden})
	a := start(t, &testproxy.Proxy{Name: "a"})
	b := start(t, &testproxy.Proxy{Name: "b"})
	n, st, _ := crawl(t, s, map[string]any{
		"PROXY_LIST": []any{banned.URL(), a.URL(), b.URL()}, "PROXY_REST_MIN": 600,
		"SESSION_POOL_SIZE": 2, "CONCURRENT_REQUESTS": 1, "ROBOTSTXT_OBEY": false,
	})
	if n != 30 || s.direct.Load() != 0 {
		t.Errorf("%d of 30 pages, %d direct requests", n, s.direct.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	for id, ps := range via {
		if len(ps) != 1 {
			t.Errorf("visitor %s came through %d proxies %v; a session keeps its proxy", id, len(ps), ps)
		}
	}
	if st["session/retired/banned"] < 1 {
		t.Errorf("session/retired/banned = %v; the session refused through the banned proxy was not retired", st["session/retired/banned"])
	}
}
