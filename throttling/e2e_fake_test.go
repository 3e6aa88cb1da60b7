package throttling_test

// End-to-end tests on fake time: a real engine (scheduler, throttler,
// downloader, middlewares) runs inside a testing/synctest bubble and
// fetches from an in-process site through its Transport, so no request
// touches the network. In a bubble, time.Now and timers are fake and time
// moves only when every goroutine of the crawl is blocked waiting for it:
// the throttler's delays and the site's token bucket see exact times, and
// a rate measured in fake time is the same on an idle laptop and on a
// loaded 2-core CI machine. (The engine's clock is clock.Real, which the
// bubble fakes.) The wall-clock forms of these measurements, against
// devtools/simsite over real sockets, are benchmarks in e2e_bench_test.go.

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/spider"
)

// inProcess is an http.RoundTripper that serves requests with a handler in
// the calling goroutine: inside a bubble, a request takes no time unless
// the handler sleeps. As with net/http's client, a body shorter than the
// Content-Length the handler set ends in io.ErrUnexpectedEOF (the
// downloader's ResponseDataLossError).
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	res := rec.Result()
	res.Request = r
	if n := int64(rec.Body.Len()); res.ContentLength > n {
		res.Body = io.NopCloser(io.MultiReader(res.Body, errReader{io.ErrUnexpectedEOF}))
	}
	return res, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// hit is one request as a site saw it.
type hit struct {
	host      string
	at        time.Time // arrival
	limited   bool      // answered 429 by the limiter
	ok        bool      // answered 200
	violation bool      // arrived inside a Retry-After window announced before it
}

// bucketSite is an in-process site limited by a token bucket (rate tokens
// per second, burst tokens, starting full), decided when a request
// arrives: a request without a token gets a 429, with a Retry-After in
// whole seconds until the next token when retryAfter is set; others get a
// 200. Every answer leaves latency after the request arrived (a crawl's
// sends and the answers it learns from are never at the same instant,
// as on a network). It records every hit.
//
// A request arriving after a Retry-After answer left and before the end
// of the window it announced is a violation (simsite's rule, without its
// grace: in a bubble the clock does not move until the crawl has
// processed every answer).
type bucketSite struct {
	rate       float64
	burst      float64
	retryAfter bool
	latency    time.Duration

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	windows [][2]time.Time // announced Retry-After windows: (answer left, until)
	hits    []hit
}

func (s *bucketSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	s.mu.Lock()
	h := hit{host: r.Host, at: now}
	for _, w := range s.windows {
		h.violation = h.violation || (now.After(w[0]) && now.Before(w[1]))
	}
	if s.rate > 0 {
		if s.last.IsZero() {
			s.tokens, s.last = s.burst, now
		}
		s.tokens = min(s.burst, s.tokens+now.Sub(s.last).Seconds()*s.rate)
		s.last = now
		if s.tokens < 1 {
			h.limited = true
		} else {
			s.tokens--
		}
	}
	var wait time.Duration
	if h.limited && s.retryAfter {
		secs := max(math.Ceil((1-s.tokens)/s.rate), 1)
		wait = time.Duration(secs) * time.Second
		s.windows = append(s.windows, [2]time.Time{now.Add(s.latency), now.Add(wait)})
	}
	h.ok = !h.limited
	s.hits = append(s.hits, h)
	s.mu.Unlock()
	time.Sleep(s.latency)
	if h.limited {
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		}
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	fmt.Fprint(w, "ok")
}

func (s *bucketSite) recorded() []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits...)
}

// crawlInProcess crawls sp against site (every host), on fake time when
// called inside a bubble.
func crawlInProcess(t *testing.T, sp spider.Spider, site http.Handler, kv ...any) *engine.Result {
	t.Helper()
	return crawlWith(t, sp, engine.Options{Transport: inProcess{site}}, kv...)
}

// convergence measures hits from from to to: the rate of 200s per second,
// and the 429s per window.
func convergence(hits []hit, from, to time.Time, window time.Duration) (okRate, limitedPerWindow float64) {
	ok, limited := 0, 0
	for _, h := range hits {
		if h.at.Before(from) || !h.at.Before(to) {
			continue
		}
		if h.limited {
			limited++
		} else if h.ok {
			ok++
		}
	}
	secs := to.Sub(from).Seconds()
	return float64(ok) / secs, float64(limited) / (secs / window.Seconds())
}

// Rampup convergence: against a token bucket of 20 requests per second
// (burst 1, 429 without Retry-After) and 0.5 s windows, a rampup scope that
// starts at 4/s (delay 0.25 s) converges to close to the bucket's rate
// with about the target number of 429s per window. On fake time the
// measured rate depends only on the throttler: a rampup that stopped
// ramping up (or backed off for good) shows a low rate, one that ignored
// 429s shows many 429s per window.
func TestE2ERampupConverges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, window = 20.0, 500 * time.Millisecond
		site := &bucketSite{rate: rate, burst: 1, latency: 5 * time.Millisecond}
		start := time.Now()
		crawl := crawlInProcess(t, &listSpider{urls: urls("http://api.test", 5000)}, site,
			"BACKOFF_WINDOW", window.Seconds(), "CLOSESPIDER_TIMEOUT", 6.0,
			"THROTTLING_SCOPES", map[string]any{"api.test": map[string]any{
				"delay": 0.25, "concurrency": 4,
				"rampup":  map[string]any{"backoff_target": 1, "delay_factor": 0.8},
				"backoff": map[string]any{"min_delay": 0.01, "delay_factor": 1.25},
			}})
		if crawl.Reason != "closespider_timeout" {
			t.Fatalf("crawl ended with %q after %v, want closespider_timeout", crawl.Reason, crawl.Elapsed)
		}
		// Judge the second half (3 s .. 6 s): the ramp from 4/s is over.
		okRate, perWindow := convergence(site.recorded(), start.Add(3*time.Second), start.Add(6*time.Second), window)
		t.Logf("second half: %.1f ok/s (limit %.0f/s), %.2f 429s per %v window (target 1)", okRate, rate, perWindow, window)
		if okRate < 0.6*rate || okRate > 1.1*rate {
			t.Errorf("converged to %.1f ok/s, want close to %.0f (60%%..110%%)", okRate, rate)
		}
		if perWindow > 4 {
			t.Errorf("%.2f 429s per window, want about the target of 1 (at most 4)", perWindow)
		}
	})
}

// Retry-After pacing against a token bucket (10/s, burst 5, 429 with
// Retry-After): with pacing a scope of concurrency 8 spreads its requests
// after each Retry-After and almost stops getting 429s; without it, every
// Retry-After ends in a burst of 8 into 5 tokens. No request may arrive
// inside an announced Retry-After window, with or without pacing.
func TestE2ERetryAfterPacing(t *testing.T) {
	share := func(t *testing.T, pacing bool) float64 {
		var limitedShare float64
		synctest.Test(t, func(t *testing.T) {
			site := &bucketSite{rate: 10, burst: 5, retryAfter: true, latency: 5 * time.Millisecond}
			crawlInProcess(t, &listSpider{urls: urls("http://strict.test", 80)}, site, "BACKOFF_RETRY_AFTER_PACING", pacing)
			hits := site.recorded()
			limited, violations := 0, 0
			for _, h := range hits {
				if h.limited {
					limited++
				}
				if h.violation {
					violations++
				}
			}
			if violations != 0 {
				t.Fatalf("pacing=%v: %d requests inside an announced Retry-After window", pacing, violations)
			}
			limitedShare = float64(limited) / float64(len(hits))
			t.Logf("pacing=%v: %d requests, %d answered 429", pacing, len(hits), limited)
		})
		return limitedShare
	}
	paced, burst := share(t, true), share(t, false)
	if burst == 0 {
		t.Fatal("without pacing the limiter never answered 429: the test proves nothing")
	}
	t.Logf("429 share: %.0f%% with pacing, %.0f%% without", 100*paced, 100*burst)
	if paced > 0.15 || paced >= burst/2 {
		t.Fatalf("429 share with pacing %.0f%%, without %.0f%%: want under 15%% and under half", 100*paced, 100*burst)
	}
}

// Start rate: 50 free slots and 50 queued requests do not start 50
// requests at once; with MAX_STARTS_PER_SECOND 20 and MAX_STARTS_BURST 1
// no 100 ms window sees more than 3 starts (1 + 100 ms at 20/s, counting
// both ends), and the first 500 ms at most 12. On fake time a request
// reaches the site at the instant it starts.
func TestE2EStartRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		site := &bucketSite{} // no limit: records arrivals
		// The start rate on its own: no per-host start ramp (rate control
		// off), so that the unlimited crawl starts all 50 at once.
		common := []any{"CONCURRENT_REQUESTS", 50, "CONCURRENT_REQUESTS_PER_DOMAIN", 50, "THROTTLING_RATE_CONTROL", false}
		crawlInProcess(t, &listSpider{urls: urls("http://unlimited.test", 50)}, site, common...)
		crawlInProcess(t, &listSpider{urls: urls("http://limited.test", 30)}, site,
			append(common, "MAX_STARTS_PER_SECOND", 20.0, "MAX_STARTS_BURST", 1)...)
		byHost := map[string][]time.Time{}
		for _, h := range site.recorded() {
			byHost[h.host] = append(byHost[h.host], h.at)
		}
		lim, unl := byHost["limited.test"], byHost["unlimited.test"]
		limMax, unlMax := maxIn(lim, 100*time.Millisecond), maxIn(unl, 100*time.Millisecond)
		first500 := 0
		for _, at := range lim {
			if at.Sub(lim[0]) < 500*time.Millisecond {
				first500++
			}
		}
		t.Logf("starts per 100 ms: unlimited max %d, limited max %d; limited, first 500 ms: %d", unlMax, limMax, first500)
		if unlMax != 50 {
			t.Errorf("unlimited crawl: at most %d starts in 100 ms, want all 50 at once (else the limit proves nothing)", unlMax)
		}
		if limMax > 3 {
			t.Errorf("%d starts in one 100 ms window at 20/s with burst 1, want at most 3", limMax)
		}
		if first500 > 12 {
			t.Errorf("%d starts in the first 500 ms at 20/s, want at most 12", first500)
		}
		if len(lim) != 30 {
			t.Errorf("limited crawl made %d requests, want 30", len(lim))
		}
	})
}

// maxIn returns the largest number of times within any window of length w
// (both ends included).
func maxIn(times []time.Time, w time.Duration) int {
	s := append([]time.Time(nil), times...)
	sort.Slice(s, func(i, j int) bool { return s[i].Before(s[j]) })
	best := 0
	for i, j := 0, 0; j < len(s); j++ {
		for s[j].Sub(s[i]) > w {
			i++
		}
		best = max(best, j-i+1)
	}
	return best
}
