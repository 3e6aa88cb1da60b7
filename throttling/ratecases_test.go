package throttling_test

// The rate controller's end-to-end cases: a crawl with the
// defaults, concurrency 50, against devtools/simsite hosts limited by a
// token bucket, judged from the site's records. runRateCase runs one case
// either on fake time, in-process (a testing/synctest bubble and
// simsite.NewLocal: exact and fast, the default test run), or on the wall
// clock against a simsite server on 127.0.0.1 (the benchmark,
// BenchmarkRateControl).

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// rateCase is one situation the controller must handle.
type rateCase struct {
	name string
	// The strict host: a token bucket of rate (burst 5), answering
	// status (429) with Retry-After unless bare, with RateLimit headers
	// in format when set, following schedule.
	rate   float64
	burst  int // 0: 5
	status int
	bare   bool
	// retryAfter > 0 is announced on every refusal instead of the
	// bucket's computed wait.
	retryAfter time.Duration
	headers    simsite.RateLimitFormat
	schedule   []simsite.RateChange
	// capacity > 0 replaces the bucket by a host that never refuses and
	// slows down beyond capacity requests in progress (latency fixed).
	capacity int
	latency  simsite.LatencyConfig
	// lenient adds a second host without limits and this many pages.
	lenient int
	// alone crawls only the lenient host.
	alone bool
	// duration of the crawl (CLOSESPIDER_TIMEOUT); 0 = until done.
	duration time.Duration
	pages    int
	// settings over the defaults (name, value pairs); strict is replaced
	// by the strict host's scope name.
	settings []any
}

// rateResult is what the site saw.
type rateResult struct {
	requests, ok, refused, violations int
	seconds                           float64 // first request to the crawl's end
	okRate, refusedShare              float64
	// perSecond counts ok answers of the strict host by second since its
	// first request.
	perSecond []int
	// refusedAt lists the strict host's refusals, in seconds since its
	// first request.
	refusedAt []float64
	// lenientSeconds is the lenient host's first to last request.
	lenientSeconds float64
	// inFlight is the strict host's mean requests in progress.
	inFlight float64
	elapsed  time.Duration
}

const strictHost = "strict.test"

func (c rateCase) site() simsite.Config {
	pages := c.pages
	if pages == 0 {
		pages = 10000
	}
	lat := c.latency
	if lat.Kind == "" {
		lat = simsite.LatencyConfig{Kind: simsite.LatencyUniform, Min: 5 * time.Millisecond, Max: 20 * time.Millisecond}
	}
	var hosts []simsite.HostConfig
	graph := simsite.PagesConfig{Count: pages + 1, Graph: simsite.GraphChain, Size: 1024}
	if c.lenient > 0 {
		// The two-host experiment: both hosts' pages are found by
		// following links (a tree of fanout 10), as a crawl finds them.
		graph = simsite.PagesConfig{Count: pages, Graph: simsite.GraphTree, Fanout: 10, Size: 4096, Links: simsite.LinksRelative}
	}
	if !c.alone {
		h := simsite.HostConfig{Name: strictHost, Seed: 2, Latency: lat, Pages: graph}
		if c.capacity > 0 {
			h.Latency.Capacity = c.capacity
		} else {
			status := c.status
			if status == 0 {
				status = http.StatusTooManyRequests
			}
			burst := 5
			if c.burst > 0 {
				burst = c.burst
			}
			h.Limit = simsite.LimitConfig{Rate: c.rate, Burst: burst, Status: status, Schedule: c.schedule,
				RetryAfter: simsite.RetryAfterSeconds, RetryAfterValue: c.retryAfter, RateLimitHeaders: c.headers != "", RateLimitFormat: c.headers}
			if c.bare {
				h.Limit.RetryAfter = simsite.RetryAfterNone
			}
		}
		hosts = append(hosts, h)
	}
	if c.lenient > 0 {
		hosts = append(hosts, simsite.HostConfig{Name: "lenient.test", Seed: 1, Latency: lat,
			Pages: simsite.PagesConfig{Count: c.lenient, Graph: simsite.GraphTree, Fanout: 10, Size: 4096, Links: simsite.LinksRelative}})
	}
	return simsite.Config{Hosts: hosts}
}

// crawlRateCase crawls the case's pages against srv reached at base URLs
// (host name -> URL), with the defaults plus the case's settings.
func crawlRateCase(t testing.TB, c rateCase, base map[string]string, opts engine.Options) *engine.Result {
	t.Helper()
	res, err := crawlRateCaseErr(c, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func crawlRateCaseErr(c rateCase, base map[string]string, opts engine.Options) (*engine.Result, error) {
	var sp spider.Spider
	if c.lenient > 0 {
		starts := []string{base["lenient.test"] + "/"}
		if !c.alone {
			starts = append(starts, base[strictHost]+"/")
		}
		sp = &followSpider{Base: spider.Base{StartURLs: starts}}
	}
	var urls []string
	if !c.alone {
		n := c.pages
		if n == 0 {
			n = 10000
		}
		for i := 1; i <= n; i++ {
			urls = append(urls, fmt.Sprintf("%s/page/%d", base[strictHost], i))
		}
	}
	var lenient []string
	for i := 1; i <= c.lenient; i++ {
		lenient = append(lenient, fmt.Sprintf("%s/page/%d", base["lenient.test"], i))
	}
	// Interleave the lenient host's pages with the strict host's first
	// ones, as a crawl discovering both would.
	all := make([]string, 0, len(urls)+len(lenient))
	for i := 0; i < max(len(urls), len(lenient)); i++ {
		if i < len(lenient) {
			all = append(all, lenient[i])
		}
		if i < len(urls) {
			all = append(all, urls[i])
		}
	}
	s := settings.New()
	kv := []any{"CONCURRENT_REQUESTS", 50, "LOGSTATS_INTERVAL", 0.0, "STATS_DUMP", false, "LOG_LEVEL", "ERROR"}
	if c.duration > 0 {
		kv = append(kv, "CLOSESPIDER_TIMEOUT", c.duration.Seconds())
	}
	scope := hostOf(base[strictHost])
	for i := 0; i+1 < len(c.settings); i += 2 {
		v := c.settings[i+1]
		if m, ok := v.(map[string]any); ok {
			if inner, ok := m["strict"]; ok {
				v = map[string]any{scope: inner}
			}
		}
		kv = append(kv, c.settings[i], v)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if err := s.Set(kv[i].(string), kv[i+1], settings.SourceCommandLine, "test"); err != nil {
			return nil, err
		}
	}
	if sp == nil {
		sp = &listSpider{urls: all}
	}
	e, err := engine.New(sp, s, opts)
	if err != nil {
		return nil, err
	}
	return e.Run(context.Background())
}

// followSpider follows every link of every page.
type followSpider struct{ spider.Base }

func (*followSpider) Name() string { return "follow" }

func (*followSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.FollowAll(res, res.Find("a[href]"), nil)
	return nil
}

// hostOf is the host:port of a base URL, the throttling scope name.
func hostOf(base string) string {
	if len(base) > len("http://") {
		return base[len("http://"):]
	}
	return ""
}

// judge computes the result from the site's records.
func judge(c rateCase, srv *simsite.Server, end time.Time) rateResult {
	recs := srv.Records()
	var r rateResult
	strict := recs.Host(strictHost)
	if len(strict) > 0 {
		first := strict[0].Start
		r.seconds = end.Sub(first).Seconds()
		r.perSecond = make([]int, int(r.seconds)+1)
		var busy time.Duration
		for _, rec := range strict {
			r.requests++
			switch {
			case rec.Limited:
				r.refused++
				r.refusedAt = append(r.refusedAt, rec.Start.Sub(first).Seconds())
			case rec.Status == http.StatusOK:
				r.ok++
				if i := int(rec.Start.Sub(first).Seconds()); i < len(r.perSecond) {
					r.perSecond[i]++
				}
			}
			busy += rec.End.Sub(rec.Start)
		}
		r.violations = strict.RetryAfterViolations(simsite.DefaultRetryAfterGrace)
		r.okRate = float64(r.ok) / r.seconds
		r.refusedShare = float64(r.refused) / float64(r.requests)
		r.inFlight = busy.Seconds() / r.seconds
	}
	if len := recs.Host("lenient.test"); len.Stats().Requests > 0 {
		st := len.Stats()
		r.lenientSeconds = st.Last.Sub(st.First).Seconds()
	}
	return r
}

// okRateIn is the strict host's ok answers per second in [from, to)
// seconds since its first request.
func (r rateResult) okRateIn(from, to int) float64 {
	n := 0
	for i := from; i < to && i < len(r.perSecond); i++ {
		n += r.perSecond[i]
	}
	return float64(n) / float64(to-from)
}

// refusedIn counts the strict host's refusals in [from, to) seconds since
// its first request.
func (r rateResult) refusedIn(from, to int) int {
	n := 0
	for _, at := range r.refusedAt {
		if at >= float64(from) && at < float64(to) {
			n++
		}
	}
	return n
}

// reachedAt is the first second t >= from at which the ok rate over
// [t-5, t) reaches rate; -1 if never.
func (r rateResult) reachedAt(from int, rate float64) int {
	for t := from + 5; t <= len(r.perSecond); t++ {
		if r.okRateIn(t-5, t) >= rate {
			return t
		}
	}
	return -1
}

func (r rateResult) String() string {
	return fmt.Sprintf("%.2f ok/s over %.0f s, %d requests, %d refused (%.2f%%), %d inside Retry-After, %.1f in flight",
		r.okRate, r.seconds, r.requests, r.refused, 100*r.refusedShare, r.violations, r.inFlight)
}

// runRateCaseLocal runs c on fake time; call it inside a synctest bubble.
func runRateCaseLocal(t testing.TB, c rateCase) rateResult {
	srv, err := simsite.NewLocal(c.site())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	base := map[string]string{strictHost: srv.URL(strictHost), "lenient.test": srv.URL("lenient.test")}
	start := time.Now()
	opts := engine.Options{Transport: srv.Transport()}
	if os.Getenv("GOCRAWL_RATE_DEBUG") != "" {
		c.settings = append(c.settings, "THROTTLING_DEBUG", true)
		opts.Log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger()
	}
	crawlRateCase(t, c, base, opts)
	r := judge(c, srv, time.Now())
	r.elapsed = time.Since(start)
	return r
}

// runRateCaseWall runs c on the wall clock against simsite on 127.0.0.1.
func runRateCaseWall(c rateCase) (rateResult, error) {
	srv, err := simsite.Start(context.Background(), c.site())
	if err != nil {
		return rateResult{}, err
	}
	defer srv.Close()
	base := map[string]string{strictHost: localhostURL(srv.URL(strictHost)), "lenient.test": localhostURL(srv.URL("lenient.test"))}
	start := time.Now()
	if _, err := crawlRateCaseErr(c, base, engine.Options{}); err != nil {
		return rateResult{}, err
	}
	r := judge(c, srv, time.Now())
	r.elapsed = time.Since(start)
	return r, nil
}

// localhostURL addresses a simsite host as localhost:PORT, a domain scope
// as on the web (127.0.0.1:PORT would be one too, but a host name is what
// a crawl meets).
func localhostURL(u string) string {
	if u == "" {
		return ""
	}
	return "http://localhost" + u[len("http://127.0.0.1"):]
}

func medianMin(xs []float64) (med, lo float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2], s[0]
}
