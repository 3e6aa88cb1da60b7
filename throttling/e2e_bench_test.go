package throttling_test

// Wall-clock forms of the fake-time end-to-end tests of e2e_fake_test.go:
// the same crawls against devtools/simsite over real sockets. What they
// measure depends on the machine and its load, so they report it
// (b.ReportMetric) instead of asserting it; run them with -benchtime=1x.

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/spider"
)

// hitsOf converts simsite's records of host.
func hitsOf(srv *simsite.Server, host string) []hit {
	var out []hit
	for _, r := range srv.Records().Host(host) {
		out = append(out, hit{host: host, at: r.Start, limited: r.Limited, ok: r.Status == http.StatusOK})
	}
	return out
}

// BenchmarkE2ERampupConverges is TestE2ERampupConverges on the wall
// clock (6 s per iteration): the 200 rate reached in the second half, as a
// fraction of the bucket's rate (ok/limit, about 0.8 on an idle machine),
// and the 429s per window (target 1).
func BenchmarkE2ERampupConverges(b *testing.B) {
	const rate, window = 20.0, 500 * time.Millisecond
	var okRates, perWindows float64
	for b.Loop() {
		srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{
			Name:  "api",
			Limit: simsite.LimitConfig{Rate: rate, Burst: 1, Key: simsite.KeyGlobal, RetryAfter: simsite.RetryAfterNone},
			Content: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, "ok")
			}),
		}}})
		if err != nil {
			b.Fatal(err)
		}
		scope := spider.MustRequest(srv.URL("api"), nil).Host()
		start := time.Now()
		crawl(b, &listSpider{urls: urls(srv.URL("api"), 5000)},
			"BACKOFF_WINDOW", window.Seconds(), "CLOSESPIDER_TIMEOUT", 6.0, "CONCURRENT_REQUESTS_PER_IP", 0,
			"THROTTLING_SCOPES", map[string]any{scope: map[string]any{
				"delay": 0.25, "concurrency": 4,
				"rampup":  map[string]any{"backoff_target": 1, "delay_factor": 0.8},
				"backoff": map[string]any{"min_delay": 0.01, "delay_factor": 1.25},
			}})
		okRate, perWindow := convergence(hitsOf(srv, "api"), start.Add(3*time.Second), start.Add(6*time.Second), window)
		srv.Close()
		okRates += okRate
		perWindows += perWindow
	}
	b.ReportMetric(okRates/float64(b.N)/rate, "ok/limit")
	b.ReportMetric(perWindows/float64(b.N), "429/window")
}

// BenchmarkE2ERetryAfterPacing is TestE2ERetryAfterPacing on the wall
// clock: the share of 429s with and without Retry-After pacing. Requests
// inside an announced Retry-After window are a bug, whatever the clock:
// those still fail the benchmark.
func BenchmarkE2ERetryAfterPacing(b *testing.B) {
	share := func(pacing bool) float64 {
		srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{
			Name:  "strict",
			Limit: simsite.LimitConfig{Rate: 10, Burst: 5, Status: 429, RetryAfter: simsite.RetryAfterSeconds},
		}}})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		crawl(b, &listSpider{urls: urls(srv.URL("strict"), 80)}, "BACKOFF_RETRY_AFTER_PACING", pacing)
		st := srv.Stats()["strict"]
		if st.Requests == 0 {
			b.Fatal("no request reached the site")
		}
		if st.RetryAfterViolations != 0 {
			b.Fatalf("pacing=%v: %d requests inside an announced Retry-After window", pacing, st.RetryAfterViolations)
		}
		return float64(st.Limited) / float64(st.Requests)
	}
	var paced, burst float64
	for b.Loop() {
		paced += share(true)
		burst += share(false)
	}
	b.ReportMetric(100*paced/float64(b.N), "%429-paced")
	b.ReportMetric(100*burst/float64(b.N), "%429-unpaced")
}
