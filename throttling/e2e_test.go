package throttling_test

// End-to-end tests: a real engine crawling local servers (httptest and
// internal/simsite on 127.0.0.1). Timing assertions are lower bounds the
// throttler guarantees (a gap is never shorter than the delay it owes) or
// ratios with generous margins, so a slow machine cannot make them fail.

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

func crawl(t *testing.T, sp spider.Spider, kv ...any) *engine.Result {
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
	e, err := engine.New(sp, s, engine.Options{})
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

// Start rate (start-rate-and-per-host.md): 50 free slots and 50 queued
// requests do not start 50 requests in one tick; with MAX_STARTS_PER_SECOND
// 20 and MAX_STARTS_BURST 1 no 100 ms window sees more than 3 starts.
func TestE2EStartRate(t *testing.T) {
	t.Parallel()
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{
		{Name: "limited"}, {Name: "unlimited"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	common := []any{"CONCURRENT_REQUESTS", 50, "CONCURRENT_REQUESTS_PER_DOMAIN", 50, "CONCURRENT_REQUESTS_PER_IP", 0}
	crawl(t, &listSpider{urls: urls(srv.URL("unlimited"), 50)}, common...)
	crawl(t, &listSpider{urls: urls(srv.URL("limited"), 30)}, append(common, "MAX_STARTS_PER_SECOND", 20.0, "MAX_STARTS_BURST", 1)...)
	st := srv.Stats()
	lim, unl := st["limited"], st["unlimited"]
	t.Logf("starts per 100 ms: unlimited max %d, limited max %d; first 500 ms: %d vs %d",
		unl.MaxStarts100ms, lim.MaxStarts100ms, unl.StartsFirst500ms, lim.StartsFirst500ms)
	if lim.MaxStarts100ms > 3 {
		t.Errorf("%d starts in one 100 ms window at 20/s with burst 1, want at most 3", lim.MaxStarts100ms)
	}
	if lim.StartsFirst500ms > 12 {
		t.Errorf("%d starts in the first 500 ms at 20/s, want at most 12", lim.StartsFirst500ms)
	}
	if lim.Requests != 30 {
		t.Errorf("limited crawl made %d requests, want 30", lim.Requests)
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

// Rampup convergence (issue item 5): against a token bucket of R requests
// per second and short windows, a rampup scope that starts slow converges
// to a rate close to R with about the target number of 429s per window.
func TestE2ERampupConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 6 s")
	}
	t.Parallel()
	const rate = 20.0
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{
		Name:  "api",
		Limit: simsite.LimitConfig{Rate: rate, Burst: 1, Key: simsite.KeyGlobal, RetryAfter: simsite.RetryAfterNone},
		Content: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "ok")
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	scope := spider.MustRequest(srv.URL("api"), nil).Host()
	const window = 0.5
	crawl(t, &listSpider{urls: urls(srv.URL("api"), 5000)},
		"BACKOFF_WINDOW", window, "CLOSESPIDER_TIMEOUT", 6.0, "CONCURRENT_REQUESTS_PER_IP", 0,
		"THROTTLING_SCOPES", map[string]any{scope: map[string]any{
			"delay": 0.25, "concurrency": 4,
			"rampup":  map[string]any{"backoff_target": 1, "delay_factor": 0.8},
			"backoff": map[string]any{"min_delay": 0.01, "delay_factor": 1.25},
		}})
	recs := srv.Records().Host("api")
	if len(recs) == 0 {
		t.Fatal("no requests")
	}
	first := recs[0].Start
	for _, r := range recs {
		if r.Start.Before(first) {
			first = r.Start
		}
	}
	// Judge the second half (3 s .. 6 s): the ramp from 4/s is over.
	from, to := first.Add(3*time.Second), first.Add(6*time.Second)
	ok, limited := 0, 0
	for _, r := range recs {
		if r.Start.Before(from) || !r.Start.Before(to) {
			continue
		}
		if r.Limited {
			limited++
		} else if r.Status == 200 {
			ok++
		}
	}
	secs := to.Sub(from).Seconds()
	okRate := float64(ok) / secs
	perWindow := float64(limited) / (secs / window)
	t.Logf("second half: %.1f ok/s (limit %.0f/s), %.2f 429s per %.1f s window (target 1)", okRate, rate, perWindow, window)
	if okRate < 0.6*rate || okRate > 1.1*rate {
		t.Errorf("converged to %.1f ok/s, want close to %.0f (60%%..110%%)", okRate, rate)
	}
	if perWindow > 4 {
		t.Errorf("%.2f 429s per window, want about the target of 1 (at most 4)", perWindow)
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

// Retry-After pacing against a token bucket (10/s, burst 5, 429 with
// Retry-After): with pacing a scope of concurrency 8 spreads its requests
// after each Retry-After and almost stops getting 429s; without it, every
// Retry-After ends in a burst of 8 into 5 tokens (the S2 benchmark's 37%).
func TestE2ERetryAfterPacing(t *testing.T) {
	t.Parallel()
	share := func(pacing bool) (float64, simsite.HostStats) {
		srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{
			Name:  "strict",
			Limit: simsite.LimitConfig{Rate: 10, Burst: 5, Status: 429, RetryAfter: simsite.RetryAfterSeconds},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		crawl(t, &listSpider{urls: urls(srv.URL("strict"), 80)}, "BACKOFF_RETRY_AFTER_PACING", pacing)
		st := srv.Stats()["strict"]
		if st.Requests == 0 {
			t.Fatal("no request reached the site")
		}
		if st.RetryAfterViolations != 0 {
			t.Fatalf("pacing=%v: %d requests inside an announced Retry-After window", pacing, st.RetryAfterViolations)
		}
		return float64(st.Limited) / float64(st.Requests), st
	}
	paced, pst := share(true)
	burst, bst := share(false)
	if bst.Limited == 0 {
		t.Fatalf("without pacing the limiter never answered 429: the test proves nothing (%+v)", bst)
	}
	t.Logf("429 share: %.0f%% with pacing, %.0f%% without", 100*paced, 100*burst)
	if paced > 0.15 || paced >= burst/2 {
		t.Fatalf("429 share with pacing %.0f%% (%+v), without %.0f%% (%+v): want under 15%% and under half",
			100*paced, pst, 100*burst, bst)
	}
}
