package throttling_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/settings"
)

// TestBroadCrawl crawls many simsite hosts on fake time (GOCRAWL_BROAD=1;
// GOCRAWL_BROAD_HOSTS, default 2,000) and prints what the site saw: the
// broad crawl of docs/broad-crawls.md. Every host has 50 pages (a tree of
// fanout 10, found by following links from its root, the seed); of every
// 20 hosts one is strict (token bucket 0.5/s, burst 1, 429 with
// Retry-After 2), one asks Crawl-delay 2 in robots.txt, two answer in 1 s,
// the rest in 10 ms. DOWNLOAD_DELAY 1, CONCURRENT_REQUESTS 256, robots.txt
// obeyed; GOCRAWL_BROAD_RC=0 turns the rate controller off.
func TestBroadCrawl(t *testing.T) {
	if os.Getenv("GOCRAWL_BROAD") == "" {
		t.Skip("set GOCRAWL_BROAD=1 to run the broad crawl")
	}
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("GOCRAWL_BROAD_HOSTS")); err == nil && v > 0 {
		n = v
	}
	synctest.Test(t, func(t *testing.T) {
		hosts := broadHosts(n)
		srv, err := simsite.NewLocal(simsite.Config{Hosts: hosts})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		sp := &followSpider{}
		for _, h := range hosts {
			sp.StartURLs = append(sp.StartURLs, srv.URL(h.Name)+"/")
		}
		s := settings.New()
		kv := []any{"CONCURRENT_REQUESTS", 256, "DOWNLOAD_DELAY", 1.0, "LOGSTATS_INTERVAL", 0.0, "STATS_DUMP", false,
			"LOG_LEVEL", "ERROR", "CLOSESPIDER_TIMEOUT", 600.0}
		if os.Getenv("GOCRAWL_BROAD_RC") == "0" {
			kv = append(kv, "THROTTLING_RATE_CONTROL", false)
		}
		for i := 0; i < len(kv); i += 2 {
			if err := s.Set(kv[i].(string), kv[i+1], settings.SourceCommandLine, "test"); err != nil {
				t.Fatal(err)
			}
		}
		e, err := engine.New(sp, s, engine.Options{Transport: srv.Transport()})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Log(judgeBroad(srv.Records(), hosts, start))
		t.Logf("retry/max_reached %v, retry/refused_count %v, retry/refused_max_reached %v",
			res.Stats["retry/max_reached"], res.Stats["retry/refused_count"], res.Stats["retry/refused_max_reached"])
	})
}

// broadHosts is the broad crawl's site.
func broadHosts(n int) []simsite.HostConfig {
	pages := simsite.PagesConfig{Count: 50, Graph: simsite.GraphTree, Fanout: 10, Size: 2048, Links: simsite.LinksRelative}
	var hosts []simsite.HostConfig
	for i := range n {
		h := simsite.HostConfig{Name: fmt.Sprintf("h%04d.test", i), Seed: int64(i), Pages: pages,
			Latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: 10 * time.Millisecond}}
		switch i % 20 {
		case 1:
			h.Limit = simsite.LimitConfig{Rate: 0.5, Burst: 1, Status: http.StatusTooManyRequests,
				RetryAfter: simsite.RetryAfterSeconds, RetryAfterValue: 2 * time.Second}
		case 2:
			h.Robots = simsite.RobotsConfig{CrawlDelay: 2 * time.Second}
		case 3, 4:
			h.Latency.Fixed = time.Second
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// judgeBroad sums up the site's records of a broad crawl that began at
// start.
func judgeBroad(recs simsite.Records, hosts []simsite.HostConfig, start time.Time) string {
	var firsts, strictEnd []float64
	var ok, limited, total, viol, shortGaps int
	var last time.Time
	for _, h := range hosts {
		r := recs.Host(h.Name)
		if len(r) == 0 {
			continue
		}
		firsts = append(firsts, r[0].Start.Sub(start).Seconds())
		var lastOK time.Time
		var prev time.Time
		short := false
		for _, rec := range r {
			total++
			switch {
			case rec.Limited:
				limited++
			case rec.Status == http.StatusOK:
				ok++
				lastOK = rec.Start
			}
			if rec.End.After(last) {
				last = rec.End
			}
			// Gaps between page requests (robots.txt is fetched for the
			// first page, right before it) under the delay's jitter range.
			if rec.Path == "/robots.txt" {
				continue
			}
			if !prev.IsZero() && rec.Start.Sub(prev) < 500*time.Millisecond {
				short = true
			}
			prev = rec.Start
		}
		if short {
			shortGaps++
		}
		viol += r.RetryAfterViolations(simsite.DefaultRetryAfterGrace)
		if h.Limit.Rate > 0 {
			strictEnd = append(strictEnd, lastOK.Sub(start).Seconds())
		}
	}
	sort.Float64s(firsts)
	sort.Float64s(strictEnd)
	q := func(xs []float64, f float64) float64 { return xs[min(int(f*float64(len(xs))), len(xs)-1)] }
	return fmt.Sprintf("%d hosts: %d pages (200) of %d, last answer at %.1f s; %d requests, %d refused (%.2f%%), %d inside Retry-After, %d hosts with a gap under 0.5 s; "+
		"first request per host: median %.2f s, max %.2f s; strict hosts' last 200: median %.1f s, max %.1f s",
		len(hosts), ok, 50*len(hosts), last.Sub(start).Seconds(), total, limited, 100*float64(limited)/float64(total), viol, shortGaps,
		q(firsts, 0.5), q(firsts, 1), q(strictEnd, 0.5), q(strictEnd, 1))
}
