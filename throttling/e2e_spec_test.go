package throttling_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// hostSite is an in-process site that answers every request after latency
// and records, per path prefix ("/page", "/api"), when requests arrived and
// how many were in flight at most.
type hostSite struct {
	latency time.Duration

	mu       sync.Mutex
	arrived  map[string][]time.Time
	inflight map[string]int
	peak     map[string]int
}

func newHostSite(latency time.Duration) *hostSite {
	return &hostSite{latency: latency, arrived: map[string][]time.Time{}, inflight: map[string]int{}, peak: map[string]int{}}
}

func (s *hostSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := "/page"
	if len(r.URL.Path) >= 4 && r.URL.Path[:4] == "/api" {
		kind = "/api"
	}
	s.mu.Lock()
	s.arrived[kind] = append(s.arrived[kind], time.Now())
	s.inflight[kind]++
	s.peak[kind] = max(s.peak[kind], s.inflight[kind])
	s.mu.Unlock()
	time.Sleep(s.latency)
	s.mu.Lock()
	s.inflight[kind]--
	s.mu.Unlock()
	fmt.Fprint(w, "ok")
}

// offsets returns the arrivals of kind as durations since start, sorted.
func (s *hostSite) offsets(kind string, start time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, at := range s.arrived[kind] {
		out = append(out, at.Sub(start))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// mixedSpider starts pages pages and apis requests with the
// throttling_scopes meta apiMeta, on one host.
type mixedSpider struct {
	host          string
	pages, apis   int
	apiMeta       any
	parse         func(ctx context.Context, res *spider.Response, out spider.Output) error
	startDelaySec float64
}

func (*mixedSpider) Name() string { return "mixed" }

func (s *mixedSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for i := range s.apis {
			req, err := spider.NewRequest(fmt.Sprintf("http://%s/api/%d", s.host, i), nil)
			if err == nil {
				req.Set(throttling.MetaScopes, s.apiMeta)
			}
			if !yield(req, err) {
				return
			}
		}
		for i := range s.pages {
			req, err := spider.NewRequest(fmt.Sprintf("http://%s/page/%d", s.host, i), nil)
			if err == nil && s.startDelaySec > 0 {
				req.Set(throttling.MetaDelay, s.startDelaySec)
			}
			if !yield(req, err) {
				return
			}
		}
	}
}

func (s *mixedSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	if s.parse != nil {
		return s.parse(ctx, res, out)
	}
	return nil
}

// The throttling_scopes meta replaces the host scope in a crawl: an "api"
// scope with concurrency 4 and no delay, on a host whose pages have
// DOWNLOAD_DELAY 1, runs at its own pace (4 in flight at once, every api
// request done while the pages still go one a second); the pages keep
// their one-second spacing. Naming the host in the meta too puts the api
// requests back under the host's delay. On fake time (a synctest bubble),
// with the site's recorded arrivals.
func TestE2EMetaScopesReplaceTheHostScope(t *testing.T) {
	for _, sched := range schedulers {
		for _, tt := range []struct {
			name    string
			meta    any
			wantAPI []time.Duration // arrivals of the 8 api requests; nil: under the host's delay
		}{
			{"api alone", "api", []time.Duration{0, 0, 0, 0, 100 * ms, 100 * ms, 100 * ms, 100 * ms}},
			{"api and the host", []any{"api", "shop.test"}, nil},
		} {
			t.Run(sched+"/"+tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					site := newHostSite(100 * ms)
					start := time.Now()
					crawlInProcess(t, &mixedSpider{host: "shop.test", pages: 3, apis: 8, apiMeta: tt.meta}, site,
						"SCHEDULER", sched, "DOWNLOAD_DELAY", 1.0, "THROTTLING_RATE_CONTROL", false,
						"THROTTLING_SCOPES", map[string]any{"api": map[string]any{"concurrency": 4, "delay": 0}})
					api, pages := site.offsets("/api", start), site.offsets("/page", start)
					if len(api) != 8 || len(pages) != 3 {
						t.Fatalf("%d api requests and %d pages fetched, want 8 and 3", len(api), len(pages))
					}
					if p := site.peak["/api"]; p > 4 {
						t.Errorf("api peak in flight %d, want at most the scope's 4", p)
					}
					spaced := pages // one second apart: the host scope's sends
					if tt.wantAPI != nil {
						if fmt.Sprint(api) != fmt.Sprint(tt.wantAPI) {
							t.Errorf("api arrivals %v, want %v (the api scope's own pace)", api, tt.wantAPI)
						}
					} else {
						spaced = append(append([]time.Duration(nil), api...), pages...)
						sort.Slice(spaced, func(i, j int) bool { return spaced[i] < spaced[j] })
					}
					for i := 1; i < len(spaced); i++ {
						if g := spaced[i] - spaced[i-1]; g < time.Second {
							t.Errorf("host scope sends %d and %d %v apart, want DOWNLOAD_DELAY 1s: %v", i-1, i, g, spaced)
						}
					}
				})
			})
		}
	}
}

const ms = time.Millisecond

// A request's throttling_delay is applied once, whichever gate applied it
// first: a request fetched with Crawler.Download waits its 100 s there,
// and a copy of it re-yielded from the callback (the spec's
// response.request.replace(dont_filter=True)) carries the mark and goes
// through the queue without waiting the 100 s again. A copy given a new
// delay with throttling.SetRequestDelay waits that one.
func TestE2EDelayTakenAtDownloadIsNotTakenAgain(t *testing.T) {
	for _, sched := range schedulers {
		for _, tt := range []struct {
			name     string
			newDelay time.Duration // 0: the copy as it is
			want     []time.Duration
		}{
			// The first page arrives at 0 and is parsed at 10 ms; the
			// inline request waits its 100 s from there.
			{"copy keeps the mark", 0, []time.Duration{0, 100*time.Second + 10*ms, 100*time.Second + 20*ms}},
			{"copy with a new delay", 5 * time.Second, []time.Duration{0, 100*time.Second + 10*ms, 105*time.Second + 20*ms}},
		} {
			t.Run(sched+"/"+tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					site := newHostSite(10 * ms)
					var once sync.Once
					sp := &mixedSpider{host: "shop.test", pages: 1}
					sp.parse = func(ctx context.Context, res *spider.Response, out spider.Output) error {
						once.Do(func() {
							inline := spider.MustRequest("http://shop.test/page/inline", nil).Set(throttling.MetaDelay, 100.0)
							got, err := spider.CrawlerFrom(ctx).Download(ctx, inline)
							if err != nil {
								t.Errorf("Download: %v", err)
								return
							}
							again := got.Request.Clone()
							again.DontFilter = true
							if tt.newDelay > 0 {
								throttling.SetRequestDelay(again, tt.newDelay)
							}
							out.Request(again)
						})
						return nil
					}
					start := time.Now()
					crawlInProcess(t, sp, site, "SCHEDULER", sched, "THROTTLING_RATE_CONTROL", false)
					if got := site.offsets("/page", start); fmt.Sprint(got) != fmt.Sprint(tt.want) {
						t.Errorf("arrivals %v, want %v", got, tt.want)
					}
				})
			})
		}
	}
}

// The same through a crawl (engine, start limiter, both schedulers): with
// THROTTLING_RATE_CONTROL: false the 8 first requests to a new host arrive
// together, as the spec's defaults say (concurrency 8, no delay); with the
// rate controller on, its start ramp spaces them (50 ms, then 25 ms...).
func TestE2ERateControlOffHasNoStartRamp(t *testing.T) {
	for _, sched := range schedulers {
		for _, tt := range []struct {
			rateControl bool
			wantFirst2  string // the first two arrivals
			wantAllAt0  bool
		}{
			{false, "[0s 0s]", true},
			{true, "[0s 50ms]", false},
		} {
			t.Run(fmt.Sprintf("%s/rate_control=%v", sched, tt.rateControl), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					site := newHostSite(time.Second)
					start := time.Now()
					crawlInProcess(t, &mixedSpider{host: "shop.test", pages: 8}, site,
						"SCHEDULER", sched, "THROTTLING_RATE_CONTROL", tt.rateControl)
					got := site.offsets("/page", start)
					if len(got) != 8 {
						t.Fatalf("%d requests, want 8", len(got))
					}
					if s := fmt.Sprint(got[:2]); s != tt.wantFirst2 {
						t.Errorf("first arrivals %s, want %s (all: %v)", s, tt.wantFirst2, got)
					}
					if allAt0 := got[7] == 0; allAt0 != tt.wantAllAt0 {
						t.Errorf("arrivals %v: all at once %v, want %v", got, allAt0, tt.wantAllAt0)
					}
				})
			})
		}
	}
}
