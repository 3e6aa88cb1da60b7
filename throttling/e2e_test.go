package throttling_test

// End-to-end tests: a real engine crawling local servers (httptest and
// internal/simsite on 127.0.0.1) on the wall clock. Their timing
// assertions are only lower bounds the throttler guarantees (a gap is
// never shorter than the delay it owes), which a slow machine cannot
// break. Rates, ratios and counts per time window are measured on fake
// time instead (e2e_fake_test.go), and as benchmarks on the wall clock
// (e2e_bench_test.go).

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/internal/simsite"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// listSpider requests URLs (with optional meta) and ignores the answers.
type listSpider struct {
	urls []string
	meta spider.Meta
}

func (*listSpider) Name() string { return "list" }

func (s *listSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for _, u := range s.urls {
			req, err := spider.NewRequest(u, nil)
			if err == nil {
				for k, v := range s.meta {
					req.Set(k, v)
				}
			}
			if !yield(req, err) {
				return
			}
		}
	}
}

func (s *listSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	return nil
}

func crawl(t testing.TB, sp spider.Spider, kv ...any) *engine.Result {
	t.Helper()
	return crawlWith(t, sp, engine.Options{}, kv...)
}

// crawlWith runs sp with the test settings (robots.txt, retries, jitter,
// stats output off) overridden by kv, and opts.
func crawlWith(t testing.TB, sp spider.Spider, opts engine.Options, kv ...any) *engine.Result {
	t.Helper()
	s := settings.New()
	base := []any{"ROBOTSTXT_OBEY", false, "RETRY_ENABLED", false, "RANDOMIZE_DOWNLOAD_DELAY", false,
		"BACKOFF_JITTER", 0.0, "LOGSTATS_INTERVAL", 0.0, "STATS_DUMP", false}
	kv = append(base, kv...)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := s.Set(kv[i].(string), kv[i+1], settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	e, err := engine.New(sp, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func urls(base string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/p/%d", base, i)
	}
	return out
}

// arrivals records when requests reach a handler.
type arrivals struct {
	mu sync.Mutex
	at []time.Time
}

func (a *arrivals) add() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.at = append(a.at, time.Now())
	return len(a.at)
}

func (a *arrivals) gaps() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := append([]time.Time(nil), a.at...)
	sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	var g []time.Duration
	for i := 1; i < len(s); i++ {
		g = append(g, s[i].Sub(s[i-1]))
	}
	return g
}

var schedulers = []string{"ThrottlingAwareScheduler", "Scheduler"}

// 429 without headers: exponential steps from BACKOFF_MIN_DELAY, with
// both the throttling-aware scheduler and the engine-gated path.
func TestE2EBackoffOn429WithoutHeaders(t *testing.T) {
	for _, sched := range schedulers {
		t.Run(sched, func(t *testing.T) {
			t.Parallel()
			var a arrivals
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n := a.add(); n <= 2 {
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				fmt.Fprint(w, "ok")
			}))
			defer srv.Close()
			res := crawl(t, &listSpider{urls: urls(srv.URL, 5)}, "SCHEDULER", sched,
				"CONCURRENT_REQUESTS_PER_DOMAIN", 1, "BACKOFF_MIN_DELAY", 0.1, "BACKOFF_WINDOW", 60.0)
			want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}
			g := a.gaps()
			if len(g) != len(want) {
				t.Fatalf("%d requests, want 5 (stats %v)", len(g)+1, res.Stats)
			}
			for i, w := range want {
				if g[i] < w*95/100 {
					t.Errorf("gap %d = %v, want at least %v (gaps %v)", i+1, g[i], w, g)
				}
			}
		})
	}
}

// Download errors of a BACKOFF_EXCEPTIONS kind back off like 429s:
// truncated bodies (ResponseDataLossError) from simsite's fault
// injection. (Resets are not used: net/http silently re-sends a GET whose
// reused connection was reset, which blurs server-side timing.)
func TestE2EBackoffOnDownloadErrors(t *testing.T) {
	t.Parallel()
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{
		Name: "faulty",
		Faults: []simsite.FaultConfig{
			{Kind: simsite.FaultTruncate, PathPrefix: "/p/0"},
			{Kind: simsite.FaultTruncate, PathPrefix: "/p/1"},
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res := crawl(t, &listSpider{urls: urls(srv.URL("faulty"), 4)}, "SCHEDULER", "Scheduler",
		"CONCURRENT_REQUESTS_PER_DOMAIN", 1, "BACKOFF_MIN_DELAY", 0.1)
	all := srv.Records().Host("faulty")
	sort.Slice(all, func(i, j int) bool { return all[i].Start.Before(all[j].Start) })
	// net/http re-sends a GET at once, by itself, when a reused connection
	// is reset before any answer: that is one attempt, keep its last try.
	var recs simsite.Records
	for i, r := range all {
		if i+1 < len(all) && all[i+1].Path == r.Path && all[i+1].Start.Sub(r.Start) < 20*time.Millisecond {
			continue
		}
		recs = append(recs, r)
	}
	if len(recs) < 4 {
		t.Fatalf("%d requests, want at least 4 (stats %v)", len(recs), res.Stats)
	}
	// After the n-th faulty answer the next request waits at least
	// 0.1 s * 2^(n-1); every gap after the first fault is at least 0.1 s.
	faults := 0
	for i := 0; i+1 < len(recs); i++ {
		if recs[i].Fault != "" {
			faults++
		}
		if faults == 0 {
			continue
		}
		want := 100 * time.Millisecond
		if recs[i].Fault != "" {
			want <<= faults - 1
		}
		if g := recs[i+1].Start.Sub(recs[i].Start); g < want*95/100 {
			t.Errorf("gap after %s (%q) = %v, want at least %v", recs[i].Path, recs[i].Fault, g, want)
		}
	}
	if res.Stats["downloader/exception_type_count/ResponseDataLossError"] != 2 {
		t.Errorf("exception stats: %v", res.Stats)
	}
}

// 429/503 with Retry-After (both forms) and RateLimit-Reset: no request
// reaches the host before the announced time.
func TestE2EServerDelays(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header func() (string, string)
		min    time.Duration
	}{
		{"503 Retry-After seconds", 503, func() (string, string) { return "Retry-After", "1" }, time.Second},
		{"429 Retry-After HTTP-date", 429, func() (string, string) {
			return "Retry-After", time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
		}, time.Second}, // whole seconds: at least 1 s
		{"429 RateLimit-Reset", 429, func() (string, string) { return "RateLimit-Reset", "1" }, time.Second},
		{"429 Retry-After 0 = normal step", 429, func() (string, string) { return "Retry-After", "0" }, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var a arrivals
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if a.add() == 1 {
					k, v := tt.header()
					w.Header().Set(k, v)
					w.WriteHeader(tt.status)
					return
				}
				fmt.Fprint(w, "ok")
			}))
			defer srv.Close()
			crawl(t, &listSpider{urls: urls(srv.URL, 2)}, "CONCURRENT_REQUESTS_PER_DOMAIN", 1, "BACKOFF_MIN_DELAY", 0.3)
			g := a.gaps()
			if len(g) != 1 || g[0] < tt.min*95/100 {
				t.Fatalf("gaps %v, want one of at least %v", g, tt.min)
			}
		})
	}
}

// simsite counts, server-side, requests that arrive inside a Retry-After
// window it announced: a polite crawler has none.
func TestE2ERetryAfterRespectedBySimsite(t *testing.T) {
	t.Parallel()
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{
		Name:  "strict",
		Limit: simsite.LimitConfig{Rate: 4, Burst: 2, Status: 503, RetryAfter: simsite.RetryAfterSeconds},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	crawl(t, &listSpider{urls: urls(srv.URL("strict"), 12)}, "CONCURRENT_REQUESTS_PER_DOMAIN", 4, "BACKOFF_MIN_DELAY", 0.05)
	st := srv.Stats()["strict"]
	if st.Limited == 0 {
		t.Fatalf("the limiter never answered 503: the test proves nothing (%+v)", st)
	}
	if st.RetryAfterViolations != 0 {
		t.Fatalf("%d requests inside an announced Retry-After window (%+v)", st.RetryAfterViolations, st)
	}
}

// robots.txt through the engine: fetched once, disallowed requests
// dropped and counted, Crawl-delay holds from the first request.
func TestE2ERobotsTxt(t *testing.T) {
	for _, sched := range schedulers {
		t.Run(sched, func(t *testing.T) { t.Parallel(); testRobotsTxt(t, sched) })
	}
}

func testRobotsTxt(t *testing.T, sched string) {
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{
		Name:   "polite",
		Robots: simsite.RobotsConfig{CrawlDelay: 300 * time.Millisecond, Disallow: []string{"/p/private"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u := append(urls(srv.URL("polite"), 4), srv.URL("polite")+"/p/private1", srv.URL("polite")+"/p/private2")
	res := crawl(t, &listSpider{urls: u}, "SCHEDULER", sched, "ROBOTSTXT_OBEY", true, "CONCURRENT_REQUESTS_PER_DOMAIN", 8)
	recs := srv.Records().Host("polite")
	var pages []time.Time
	robots := 0
	for _, r := range recs {
		switch {
		case r.Path == "/robots.txt":
			robots++
		case len(r.Path) > 10 && r.Path[:10] == "/p/private":
			t.Errorf("disallowed %s was fetched", r.Path)
		default:
			pages = append(pages, r.Start)
		}
	}
	if robots != 1 {
		t.Errorf("robots.txt fetched %d times, want 1", robots)
	}
	if got := res.Stats["engine/dropped/robots.txt"]; got != 2 {
		t.Errorf("engine/dropped/robots.txt = %v, want 2 (stats %v)", got, res.Stats)
	}
	if len(pages) != 4 {
		t.Fatalf("%d pages fetched, want 4", len(pages))
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].Before(pages[j]) })
	for i := 1; i < len(pages); i++ {
		if g := pages[i].Sub(pages[i-1]); g < 285*time.Millisecond {
			t.Errorf("gap %d between pages = %v, want at least the 300 ms Crawl-delay", i, g)
		}
	}
	if p := recs.PeakConcurrent(); p > 1 {
		t.Errorf("peak concurrency %d under a Crawl-delay, want 1", p)
	}
}

// throttling_delay in the engine-gated path: applied once, before
// admission.
func TestE2EThrottlingDelay(t *testing.T) {
	for _, sched := range schedulers {
		t.Run(sched, func(t *testing.T) {
			t.Parallel()
			var a arrivals
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				a.add()
				fmt.Fprint(w, "ok")
			}))
			defer srv.Close()
			start := time.Now()
			crawl(t, &listSpider{urls: urls(srv.URL, 1), meta: spider.Meta{throttling.MetaDelay: 0.4}}, "SCHEDULER", sched)
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(a.at) != 1 || a.at[0].Sub(start) < 380*time.Millisecond {
				t.Fatalf("request arrived %v after the start, want at least 400 ms", a.at[0].Sub(start))
			}
		})
	}
}

// A bad THROTTLING_SCOPES entry stops the crawl at start-up, before any
// request, with an error naming the scope and the key.
func TestE2EConfigErrorAtStartup(t *testing.T) {
	s := settings.New()
	if err := s.Set("THROTTLING_SCOPES", map[string]any{"api.example": map[string]any{"rampup": map[string]any{"delay_factor": 2}}},
		settings.SourceFile, "gocrawl.yaml:3"); err != nil {
		t.Fatal(err)
	}
	_, err := engine.New(&listSpider{}, s, engine.Options{})
	if err == nil || !errors.Is(err, throttling.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), `scope "api.example"`) || !strings.Contains(err.Error(), `key "rampup.delay_factor"`) {
		t.Fatalf("engine.New error = %v, want the scope and key named", err)
	}
}
