package throttling_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/settings"
)

// A broad crawl's first seconds, on fake time: 40 hosts, 4 global slots,
// DOWNLOAD_DELAY 1, robots.txt obeyed. robots.txt takes the turn of the
// seed it is fetched for, so every host gets its first request (robots.txt)
// as soon as its seed is admitted: the 40 fetches of 10 ms each go through
// 4 slots in about 0.1 s. (When robots.txt waited for the delay after its
// seed's admission, each seed held a slot for a whole delay: 40 hosts
// through 4 slots took about 10 s.) The seed follows robots.txt one delay
// later (never closer than the jitter range's bottom, half the delay), and
// so does every next page of the host.
func TestRobotsTxtTakesTheSeedsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		pages := simsite.PagesConfig{Count: 3, Graph: simsite.GraphTree, Fanout: 2, Size: 512, Links: simsite.LinksRelative}
		var hosts []simsite.HostConfig
		for i := range n {
			hosts = append(hosts, simsite.HostConfig{Name: fmt.Sprintf("h%02d.test", i), Seed: int64(i), Pages: pages,
				Latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: 10 * time.Millisecond}})
		}
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
		kv := []any{"CONCURRENT_REQUESTS", 4, "DOWNLOAD_DELAY", 1.0, "ROBOTSTXT_OBEY", true, "LOGSTATS_INTERVAL", 0.0,
			"STATS_DUMP", false, "LOG_LEVEL", "ERROR"}
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
		if got := res.Stats["robotstxt/rescheduled_for_delay"]; got != float64(n) {
			t.Errorf("robotstxt/rescheduled_for_delay = %v, want %d (every seed follows its robots.txt through the scheduler)", got, n)
		}
		recs := srv.Records()
		var latestFirst time.Duration
		for _, h := range hosts {
			r := recs.Host(h.Name)
			if len(r) != 1+pages.Count {
				t.Fatalf("%s: %d requests, want robots.txt and %d pages", h.Name, len(r), pages.Count)
			}
			if r[0].Path != "/robots.txt" {
				t.Fatalf("%s: first request %s, want robots.txt", h.Name, r[0].Path)
			}
			latestFirst = max(latestFirst, r[0].Start.Sub(start))
			for i := 1; i < len(r); i++ {
				if gap := r[i].Start.Sub(r[i-1].Start); gap < 500*time.Millisecond {
					t.Errorf("%s: %s %v after %s, want at least 0.5 s (the delay's jitter range)", h.Name, r[i].Path, gap, r[i-1].Path)
				}
			}
		}
		if latestFirst > time.Second {
			t.Errorf("the last host's first request came %v after the start, want within 1 s (40 robots.txt of 10 ms through 4 slots)", latestFirst)
		}
	})
}
