package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/devtools/crawltest"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/middleware"
	_ "github.com/gocrawl/gocrawl/middleware/httpcache/pebblecache" // the HTTP cache store, as cli programs link it
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// crawlSpider requests its start URLs (with optional meta) and records
// responses and errback errors.
type crawlSpider struct {
	spider.Base
	meta map[string]any

	mu   sync.Mutex
	got  []*spider.Response
	errs []error
}

func (*crawlSpider) Name() string { return "it" }

func (s *crawlSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for _, u := range s.StartURLs {
			r, err := spider.NewRequest(u, s.Parse)
			if err == nil {
				r.Errback = s.OnError
				for k, v := range s.meta {
					r.Set(k, v)
				}
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

func (s *crawlSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.mu.Lock()
	s.got = append(s.got, res)
	s.mu.Unlock()
	out.Item(map[string]any{"url": res.URL.String()})
	return nil
}

func (s *crawlSpider) OnError(ctx context.Context, req *spider.Request, err error, out spider.Output) error {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
	return nil
}

// crawl runs sp to the end without robots.txt and without random delays
// or jitter, set over those defaults.
func crawl(t *testing.T, sp spider.Spider, set map[string]any, opts engine.Options) crawltest.Result {
	t.Helper()
	base := map[string]any{"ROBOTSTXT_OBEY": false, "RANDOMIZE_DOWNLOAD_DELAY": false, "BACKOFF_JITTER": 0.0, "LOG_LEVEL": "ERROR"}
	maps.Copy(base, set)
	res := crawltest.Run(t, sp, crawltest.Options{Settings: base, Engine: opts, Timeout: 30 * time.Second, CallbackErrors: true})
	if res.Reason != "finished" {
		t.Fatalf("crawl ended with %q, want finished", res.Reason)
	}
	return res
}

// arrivals records when requests reach a handler.
type arrivals struct {
	mu sync.Mutex
	at []time.Time
}

func (a *arrivals) hit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at = append(a.at, time.Now())
	return len(a.at)
}

func (a *arrivals) gaps() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var g []time.Duration
	for i := 1; i < len(a.at); i++ {
		g = append(g, a.at[i].Sub(a.at[i-1]))
	}
	return g
}

// TestRetriesWaitForTheBackingOffScope checks, server-side, that a retry
// is a new start through the throttling gate: after a 503 the host's scope
// backs off (BACKOFF_MIN_DELAY), and the retry does not arrive before
// that delay has passed.
func TestRetriesWaitForTheBackingOffScope(t *testing.T) {
	const minDelay = 300 * time.Millisecond
	var arr arrivals
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arr.hit() <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	sp := &crawlSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/flaky"}}}
	res := crawl(t, sp, map[string]any{"BACKOFF_MIN_DELAY": minDelay.Seconds()}, engine.Options{})

	gaps := arr.gaps()
	if len(gaps) != 2 {
		t.Fatalf("server saw %d requests, want 3 (first attempt and 2 retries)", len(gaps)+1)
	}
	for i, g := range gaps {
		if g < minDelay*9/10 {
			t.Errorf("retry %d arrived %v after the previous attempt, inside the scope's backoff delay %v", i+1, g, minDelay)
		}
	}
	if len(sp.got) != 1 || sp.got[0].Status != 200 {
		t.Errorf("callback got %d responses, want the final 200", len(sp.got))
	}
	for k, want := range map[string]float64{
		"retry/count": 2, "retry/reason_count/503 Service Unavailable": 2, "retry/max_reached": 0,
		"engine/rescheduled/retry": 2, "downloader/request_count": 3, "item_scraped_count": 1,
	} {
		if res.Stats[k] != want {
			t.Errorf("%s = %v, want %v", k, res.Stats[k], want)
		}
	}
}

// TestRetriesExhaustedReachErrback: after the last retry a retryable status
// goes on to HttpError, whose error (with the response) reaches the errback;
// a download error reaches it as itself.
func TestRetriesExhaustedReachErrback(t *testing.T) {
	var hits, resets arrivals
	mux := http.NewServeMux()
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) {
		hits.hit()
		http.Error(w, "down", http.StatusBadGateway)
	})
	mux.HandleFunc("/cut", func(w http.ResponseWriter, r *http.Request) {
		// Promise 100 bytes, send 5, hang up: ResponseDataLossError.
		resets.hit()
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("short"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	sp := &crawlSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/down", srv.URL + "/cut"}}}
	res := crawl(t, sp, map[string]any{"BACKOFF_MIN_DELAY": 0.01, "RETRY_TIMES": 1}, engine.Options{})

	if n := len(hits.gaps()) + 1; n != 2 {
		t.Errorf("/down requested %d times, want 2", n)
	}
	if n := len(resets.gaps()) + 1; n != 2 {
		t.Errorf("/cut requested %d times, want 2", n)
	}
	if len(sp.errs) != 2 {
		t.Fatalf("errback called %d times, want 2: %v", len(sp.errs), sp.errs)
	}
	var sawHTTP, sawDownload bool
	for _, err := range sp.errs {
		var he *middleware.StatusError
		if errors.As(err, &he) && he.Response.Status == 502 {
			sawHTTP = true
		}
		if errors.Is(err, errkind.ResponseDataLoss) {
			sawDownload = true
		}
	}
	if !sawHTTP || !sawDownload {
		t.Errorf("errback errors = %v; want an HTTPError with the 502 and a ResponseDataLossError", sp.errs)
	}
	if res.Stats["retry/max_reached"] != 2 || res.Stats["engine/dropped/httperror"] != 1 {
		t.Errorf("stats = %v", res.Stats)
	}
}

// TestRedirectsAreRecheckedAndKeepScopes: a redirect is a new request
// through the whole chain: Offsite drops a hop to a host outside the
// allowed domains, and an allowed hop keeps the custom throttling scopes.
func TestRedirectsAreRecheckedAndKeepScopes(t *testing.T) {
	var srvURL, otherHost string
	mux := http.NewServeMux()
	mux.HandleFunc("/to-offsite", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+otherHost+"/x", http.StatusFound)
	})
	mux.HandleFunc("/to-page", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srvURL+"/page", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "page") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	srvURL = srv.URL
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	otherHost = "localhost:" + port // same server, another host name

	sp := &crawlSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/to-offsite", srv.URL + "/to-page"}, Domains: []string{"127.0.0.1"}},
		meta: map[string]any{"throttling_scopes": "custom"}}
	res := crawl(t, sp, nil, engine.Options{})

	if len(sp.got) != 1 {
		t.Fatalf("callback got %d responses, want 1", len(sp.got))
	}
	r := sp.got[0].Request
	if r.URL.Path != "/page" || r.Get("throttling_scopes") != "custom" {
		t.Errorf("final request %s has throttling_scopes %v, want custom", r, r.Get("throttling_scopes"))
	}
	urls, _ := r.Get(middleware.MetaRedirectURLs).([]any)
	if len(urls) != 1 || urls[0] != srv.URL+"/to-page" {
		t.Errorf("redirect_urls = %v", urls)
	}
	if len(sp.errs) != 1 || !errors.Is(sp.errs[0], middleware.ErrDropped) {
		t.Errorf("errback errors = %v, want one offsite drop", sp.errs)
	}
	if res.Stats["engine/dropped/offsite"] != 1 || res.Stats["offsite/filtered"] != 1 || res.Stats["engine/rescheduled/redirect"] != 2 {
		t.Errorf("stats = %v", res.Stats)
	}
}

type startCounter struct{ started, finished atomic.Int64 }

func (o *startCounter) RequestStarted(time.Time, *spider.Request, throttling.Scopes) {
	o.started.Add(1)
}
func (o *startCounter) RequestFinished(time.Time, *spider.Request, throttling.Scopes, *spider.Response, error) {
	o.finished.Add(1)
}

type linkSpider struct {
	spider.Base
	mu    sync.Mutex
	flags map[string][]string
}

func (*linkSpider) Name() string { return "links" }

func (s *linkSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.mu.Lock()
	s.flags[res.URL.Path] = res.Flags
	s.mu.Unlock()
	out.Item(res.URL.Path)
	out.FollowAll(res, res.Find("a[href]"), s.Parse)
	return nil
}

// TestCachedResponsesSkipThrottling crawls a site twice with the same
// HTTPCACHE_DIR. The second crawl has a one-hour DOWNLOAD_DELAY and a clock
// that never moves: any request that went through throttling would wait
// forever. It finishes, sends nothing, and counts no start.
func TestCachedResponsesSkipThrottling(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<a href="/a">a</a> <a href="/b">b</a> <a href="/moved">moved</a>`)
		case "/moved":
			http.Redirect(w, r, "/c", http.StatusMovedPermanently)
		default:
			fmt.Fprint(w, `<a href="/">home</a>`)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	// robots.txt too: fetched through Crawler.Download, answered from the
	// cache in the second crawl.
	set := map[string]any{"HTTPCACHE_ENABLED": true, "HTTPCACHE_DIR": dir, "ROBOTSTXT_OBEY": true}

	first := &linkSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/"}}, flags: map[string][]string{}}
	res1 := crawl(t, first, set, engine.Options{})
	sent := hits.Load()
	if sent != 6 || res1.Stats["httpcache/store"] != 6 || res1.Stats["item_scraped_count"] != 4 {
		t.Fatalf("first crawl: %d requests, stats %v", sent, res1.Stats)
	}

	set["DOWNLOAD_DELAY"] = 3600.0
	obs := &startCounter{}
	second := &linkSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/"}}, flags: map[string][]string{}}
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	res2 := crawl(t, second, set, engine.Options{Clock: fake, Observers: []engine.Observer{obs}})
	if hits.Load() != sent {
		t.Errorf("second crawl sent %d requests, want 0", hits.Load()-sent)
	}
	if obs.started.Load() != 0 || res2.Stats["downloader/request_count"] != 0 {
		t.Errorf("second crawl counted %d starts, downloader/request_count %v", obs.started.Load(), res2.Stats["downloader/request_count"])
	}
	if res2.Stats["httpcache/hit"] != 6 || res2.Stats["item_scraped_count"] != 4 {
		t.Errorf("second crawl stats = %v", res2.Stats)
	}
	for path, flags := range second.flags {
		if !slices.Contains(flags, "cached") {
			t.Errorf("%s not flagged cached: %v", path, flags)
		}
	}
}

func init() {
	middleware.RegisterDownloader("testPanicsOnBad", func(c *spider.Crawler) (middleware.Downloader, error) {
		return middleware.DownloaderFunc(func(next middleware.Fetcher) middleware.Fetcher {
			return middleware.FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
				if req.URL.Path == "/bad" {
					var m map[string]int
					m["boom"]++ // a bug: assignment to a nil map
				}
				return next.Fetch(ctx, req)
			})
		}), nil
	})
}

// TestPanickingMiddlewareDoesNotStopTheCrawl: the request it panicked on
// fails with an error naming the middleware and the request; the others
// are crawled.
func TestPanickingMiddlewareDoesNotStopTheCrawl(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	sp := &crawlSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/a", srv.URL + "/bad", srv.URL + "/c"}}}
	res := crawl(t, sp, map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"testPanicsOnBad": 10}}, engine.Options{})
	if len(sp.got) != 2 || len(sp.errs) != 1 {
		t.Fatalf("responses %d, errors %v; want 2 and the panic", len(sp.got), sp.errs)
	}
	var pe *middleware.PanicError
	if !errors.As(sp.errs[0], &pe) || pe.Middleware != "testPanicsOnBad" || pe.Request.URL.Path != "/bad" {
		t.Errorf("errback error = %v", sp.errs[0])
	}
	if res.Stats["middleware/panic_count/testPanicsOnBad"] != 1 {
		t.Errorf("stats = %v", res.Stats)
	}
}

// TestInvalidMiddlewareSettingsFailAtStart: engine.New refuses to start,
// naming the entry.
func TestInvalidMiddlewareSettingsFailAtStart(t *testing.T) {
	for _, tt := range []struct {
		set  map[string]any
		want string
	}{
		{map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"Cookie": 700}}, `DOWNLOADER_MIDDLEWARES: entry "Cookie" is not a registered component`},
		{map[string]any{"SPIDER_MIDDLEWARES": map[string]any{"Depth": "last"}}, `SPIDER_MIDDLEWARES: entry "Depth": order must be an integer or null`},
		{map[string]any{"RETRY_EXCEPTIONS": []string{"TimeoutError"}}, `RETRY_EXCEPTIONS: unknown error kind "TimeoutError"`},
	} {
		s := settings.New()
		if err := s.SetMap(tt.set, settings.SourceFile, "gocrawl.yaml"); err != nil {
			t.Fatal(err)
		}
		_, err := engine.New(&crawlSpider{}, s, engine.Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("engine.New error = %v, want %q", err, tt.want)
		}
	}
}
