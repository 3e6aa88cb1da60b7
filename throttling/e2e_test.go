package throttling_test

// End-to-end tests of the throttler's delays: a real engine (scheduler,
// throttler, downloader, middlewares) inside a testing/synctest bubble,
// fetching from in-process sites (a handler through inProcess, or
// simsite.NewLocal through its Transport), so no request touches the
// network and time is fake. A gap between two requests as the site sees
// it is then exactly what the throttler decided, on an idle laptop as on
// a loaded CI machine: the tests assert exact gaps, which fail if a delay
// is not respected (or is overshot). Sites answer after a small latency
// where the moment of the answer matters (a backoff delay counts from the
// trigger, a Crawl-delay from the previous send). Rates, ratios and
// counts per time window are in e2e_fake_test.go, their wall-clock forms
// benchmarks in e2e_bench_test.go.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/engine"
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

// latency is how long the in-process sites of these tests take to answer:
// it separates a send from the answer it gets, as any network does. (A
// site answering at the very instant of the request makes instants tie
// that never tie on a real clock: robots.txt ready at the instant pages
// were admitted lets some of them through before its Crawl-delay.)
const latency = 10 * time.Millisecond

// checkGaps fails t unless the gaps between arrivals are exactly want.
func checkGaps(t *testing.T, got, want []time.Duration) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d requests (gaps %v), want %d (gaps %v)", len(got)+1, got, len(want)+1, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("gap %d = %v, want %v (gaps %v, want %v)", i+1, got[i], want[i], got, want)
		}
	}
}

// 429 without headers: exponential steps from BACKOFF_MIN_DELAY, with
// both the throttling-aware scheduler and the engine-gated path. A step
// counts from the trigger (the 429 answer, latency after its request
// arrived); after a 200 the scope's delay, then 200 ms, counts from the
// previous send (BACKOFF_WINDOW 60 s: no recovery during the crawl).
func TestE2EBackoffOn429WithoutHeaders(t *testing.T) {
	for _, sched := range schedulers {
		t.Run(sched, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var a arrivals
				site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n := a.add()
					time.Sleep(latency)
					if n <= 2 {
						w.WriteHeader(http.StatusTooManyRequests)
						return
					}
					fmt.Fprint(w, "ok")
				})
				crawlInProcess(t, &listSpider{urls: urls("http://api.test", 5)}, site, "SCHEDULER", sched,
					"CONCURRENT_REQUESTS_PER_DOMAIN", 1, "BACKOFF_MIN_DELAY", 0.1, "BACKOFF_WINDOW", 60.0)
				ms := time.Millisecond
				checkGaps(t, a.gaps(), []time.Duration{latency + 100*ms, latency + 200*ms, 200 * ms, 200 * ms})
			})
		})
	}
}

// Download errors of a BACKOFF_EXCEPTIONS kind back off like 429s:
// truncated bodies (shorter than their Content-Length: the downloader's
// ResponseDataLossError) for the first two requests.
func TestE2EBackoffOnDownloadErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a arrivals
		site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := a.add()
			time.Sleep(latency)
			if n <= 2 {
				w.Header().Set("Content-Length", "100")
				fmt.Fprint(w, "truncated")
				return
			}
			fmt.Fprint(w, "ok")
		})
		res := crawlInProcess(t, &listSpider{urls: urls("http://faulty.test", 4)}, site, "SCHEDULER", "Scheduler",
			"CONCURRENT_REQUESTS_PER_DOMAIN", 1, "BACKOFF_MIN_DELAY", 0.1)
		if got := res.Stats["downloader/exception_type_count/ResponseDataLossError"]; got != 2 {
			t.Errorf("ResponseDataLossError count %v, want 2 (stats %v)", got, res.Stats)
		}
		ms := time.Millisecond
		checkGaps(t, a.gaps(), []time.Duration{latency + 100*ms, latency + 200*ms, 200 * ms})
	})
}

// 429/503 with Retry-After (both forms) and RateLimit-Reset: no request
// reaches the host before the announced time, and the next one comes when
// it ends. A server delay counts from the answer (latency after the
// arrival; the HTTP-date is absolute: 2 s after the arrival, which the
// fake clock puts on a whole second); "Retry-After: 0" is a normal
// backoff step, also counted from the answer. Each case runs twice: with
// Retry-After pacing and rate control off, the gap is exactly the hard
// minimum; with the defaults, rate control resumes the scope at the rate
// it had, lowered by 1 % (rcBetaPause), so the gap is up to 1/0.99 of it
// (this pace alone would hide a hard minimum cut short).
func TestE2EServerDelays(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header func() (string, string)
		want   time.Duration // between the two arrivals
	}{
		{"503 Retry-After seconds", 503, func() (string, string) { return "Retry-After", "1" }, latency + time.Second},
		{"429 Retry-After HTTP-date", 429, func() (string, string) {
			return "Retry-After", time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
		}, 2 * time.Second},
		{"429 RateLimit-Reset", 429, func() (string, string) { return "RateLimit-Reset", "1" }, latency + time.Second},
		{"429 Retry-After 0 = normal step", 429, func() (string, string) { return "Retry-After", "0" }, latency + 300*time.Millisecond},
	}
	gap := func(t *testing.T, header func() (string, string), status int, kv ...any) time.Duration {
		var g []time.Duration
		synctest.Test(t, func(t *testing.T) {
			var a arrivals
			site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := a.add()
				var k, v string
				if n == 1 {
					k, v = header()
				}
				time.Sleep(latency)
				if n == 1 {
					w.Header().Set(k, v)
					w.WriteHeader(status)
					return
				}
				fmt.Fprint(w, "ok")
			})
			crawlInProcess(t, &listSpider{urls: urls("http://api.test", 2)}, site,
				append([]any{"CONCURRENT_REQUESTS_PER_DOMAIN", 1, "BACKOFF_MIN_DELAY", 0.3}, kv...)...)
			g = a.gaps()
		})
		if len(g) != 1 {
			t.Fatalf("gaps %v, want one", g)
		}
		return g[0]
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if g := gap(t, tt.header, tt.status, "THROTTLING_RATE_CONTROL", false, "BACKOFF_RETRY_AFTER_PACING", false); g != tt.want {
				t.Errorf("without pacing: gap %v, want %v", g, tt.want)
			}
			paced := time.Duration(float64(tt.want)/0.99) + time.Microsecond
			if g := gap(t, tt.header, tt.status); g < tt.want || g > paced {
				t.Errorf("with the defaults: gap %v, want %v (up to %v)", g, tt.want, paced)
			}
		})
	}
}

// simsite counts, server-side, requests that arrive inside a Retry-After
// window it announced: a polite crawler has none, without the grace
// simsite gives a client on the wall clock (DefaultRetryAfterGrace): on
// fake time a request already on its way when the 503 left started before
// it, at the same instant or earlier. After the window the crawl resumes
// at once (within the 1 % of rate control's resume pace).
func TestE2ERetryAfterRespectedBySimsite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := simsite.NewLocal(simsite.Config{Hosts: []simsite.HostConfig{{
			Name:    "strict.test",
			Limit:   simsite.LimitConfig{Rate: 4, Burst: 2, Status: 503, RetryAfter: simsite.RetryAfterSeconds},
			Latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: latency},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		crawlWith(t, &listSpider{urls: urls(srv.URL("strict.test"), 12)}, engine.Options{Transport: srv.Transport()},
			"CONCURRENT_REQUESTS_PER_DOMAIN", 4, "BACKOFF_MIN_DELAY", 0.05)
		recs := srv.Records().Host("strict.test")
		st := recs.Stats()
		if st.Limited == 0 {
			t.Fatalf("the limiter never answered 503: the test proves nothing (%+v)", st)
		}
		if n := recs.RetryAfterViolations(0); n != 0 {
			t.Fatalf("%d requests inside an announced Retry-After window (%+v)", n, st)
		}
		resumed := 0
		for _, w := range recs {
			if w.RetryAfterUntil.IsZero() {
				continue
			}
			var next time.Time // the first request sent after the 503
			for _, r := range recs {
				if r.Start.After(w.End) && (next.IsZero() || r.Start.Before(next)) {
					next = r.Start
				}
			}
			if next.IsZero() {
				continue // the crawl was over
			}
			resumed++
			wait := w.RetryAfterUntil.Sub(w.End)
			if late := next.Sub(w.RetryAfterUntil); late > time.Duration(float64(wait)/0.99)-wait {
				t.Errorf("first request %v after the end of a %v Retry-After window, want at most 1 %%", late, wait)
			}
		}
		if resumed == 0 {
			t.Fatalf("no request after a Retry-After window: the test proves nothing (%+v)", st)
		}
	})
}

// robots.txt through the engine: fetched once, disallowed requests
// dropped and counted, Crawl-delay holds from the first request (the
// robots.txt fetch): pages exactly 300 ms apart, one at a time.
func TestE2ERobotsTxt(t *testing.T) {
	for _, sched := range schedulers {
		for _, lat := range []time.Duration{latency, 0} {
			// With no latency robots.txt is answered at the instant it
			// was sent: a page admitted at that same instant must still
			// wait for the Crawl-delay.
			t.Run(fmt.Sprintf("%s/latency=%v", sched, lat), func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) { testRobotsTxt(t, sched, lat) })
			})
		}
	}
}

func testRobotsTxt(t *testing.T, sched string, latency time.Duration) {
	const crawlDelay = 300 * time.Millisecond
	srv, err := simsite.NewLocal(simsite.Config{Hosts: []simsite.HostConfig{{
		Name:    "polite.test",
		Robots:  simsite.RobotsConfig{CrawlDelay: crawlDelay, Disallow: []string{"/p/private"}},
		Latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: latency},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := srv.URL("polite.test")
	u := append(urls(base, 4), base+"/p/private1", base+"/p/private2")
	res := crawlWith(t, &listSpider{urls: u}, engine.Options{Transport: srv.Transport()},
		"SCHEDULER", sched, "ROBOTSTXT_OBEY", true, "CONCURRENT_REQUESTS_PER_DOMAIN", 8)
	recs := srv.Records().Host("polite.test")
	var sends []time.Time // robots.txt, then the pages
	robots := 0
	for _, r := range recs {
		switch {
		case r.Path == "/robots.txt":
			robots++
			sends = append([]time.Time{r.Start}, sends...)
		case strings.HasPrefix(r.Path, "/p/private"):
			t.Errorf("disallowed %s was fetched", r.Path)
		default:
			sends = append(sends, r.Start)
		}
	}
	if robots != 1 {
		t.Fatalf("robots.txt fetched %d times, want 1", robots)
	}
	if got := res.Stats["engine/dropped/robots.txt"]; got != 2 {
		t.Errorf("engine/dropped/robots.txt = %v, want 2 (stats %v)", got, res.Stats)
	}
	if len(sends) != 5 {
		t.Fatalf("%d pages fetched, want 4", len(sends)-1)
	}
	sort.Slice(sends[1:], func(i, j int) bool { return sends[1+i].Before(sends[1+j]) })
	for i := 1; i < len(sends); i++ {
		// Every gap is the Crawl-delay exactly, at zero latency too: the
		// disallowed pages are admitted and dropped by the middleware
		// without reaching the server, and a page admitted before the
		// delay was applied is rescheduled; both give their turn back
		// (Throttler.NotSent), so neither adds a delay.
		if g := sends[i].Sub(sends[i-1]); g != crawlDelay {
			t.Errorf("gap %d = %v (after robots.txt, then between pages), want the %v Crawl-delay", i, g, crawlDelay)
		}
	}
	if p := recs.PeakConcurrent(); p > 1 {
		t.Errorf("peak concurrency %d under a Crawl-delay, want 1", p)
	}
}

// throttling_delay in the engine-gated path: applied once, before
// admission: the request arrives exactly its 400 ms after the start.
func TestE2EThrottlingDelay(t *testing.T) {
	for _, sched := range schedulers {
		t.Run(sched, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var a arrivals
				site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					a.add()
					fmt.Fprint(w, "ok")
				})
				start := time.Now()
				crawlInProcess(t, &listSpider{urls: urls("http://api.test", 1), meta: spider.Meta{throttling.MetaDelay: 0.4}}, site, "SCHEDULER", sched)
				if len(a.at) != 1 {
					t.Fatalf("%d requests, want 1", len(a.at))
				}
				if d := a.at[0].Sub(start); d != 400*time.Millisecond {
					t.Fatalf("request arrived %v after the start, want 400 ms", d)
				}
			})
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
