// Package scenario defines the benchmark scenarios (S1-S4): the
// simulated site each one serves and how each crawler is configured for it.
// The site process, the crawler runners and the orchestrator all read the
// definitions from here, so they cannot disagree.
package scenario

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// Scenario is one benchmark situation.
type Scenario struct {
	// Name, e.g. "S1".
	Name string
	// About is a one-line description for the report.
	About string
	// Site is what the site process serves.
	Site simsite.Config
	// Concurrency is the global pool size of both crawlers.
	Concurrency int
	// Variants are the crawler configurations run against the site.
	Variants []Variant
	// Broad, when set, makes this a broad crawl: its site is
	// bench/cmd/broad's server (Site is unused) and its run is
	// bench/cmd/broad's.
	Broad *Broad
	// RSSEvery, when not 0, makes the runner record its resident set size
	// every RSSEvery responses (the memory curve of a long crawl).
	RSSEvery int
}

// Variant is one crawler configuration.
type Variant struct {
	// Name labels the variant in the table ("gocrawl", "colly", ...).
	Name string
	// Crawler is "gocrawl", "colly", "bare" (a net/http fetch loop with a
	// regexp link scan: the ceiling the others are measured against) or
	// "bare-fasthttp" (the same loop on fasthttp's client).
	Crawler string
	// Settings are the gocrawl settings over its defaults.
	Settings map[string]any
	// CollyDelay is the Delay of colly's LimitRule.
	CollyDelay time.Duration
	// Spider is the gocrawl spider: "" for the bench's own (FollowAll of
	// a[href] on every page, the work colly's OnHTML does), "follow" for
	// the built-in follow spider (a CrawlSpider rule, and an item per page).
	Spider string
	// FastHTTP gives gocrawl's downloader a transport over fasthttp's
	// client instead of net/http's (bench/cmd/runner/fasttransport.go):
	// the framework unchanged, on a faster HTTP client.
	FastHTTP bool
	// JobDir runs gocrawl with a JOBDIR (a fresh temporary folder), so the
	// queue, the seen set and the stats live in Pebble.
	JobDir bool
	// Warc archives the crawl as WARC files in a fresh temporary folder
	// (WARC_DIR), deleted after the run.
	Warc bool
	// Feed exports every item of gocrawl's crawl to a feed: "jsonl" (a
	// file), "sqlite" (a database file) or "postgresql" (the database
	// of the environment variable BENCH_POSTGRESQL_URL), each new for
	// the run.
	Feed string
}

// Hosts returns the host names of s's site.
func (s Scenario) Hosts() []string {
	if b := s.Broad; b != nil {
		out := make([]string, b.Hosts)
		for i := range out {
			out[i] = b.HostName(i)
		}
		return out
	}
	out := make([]string, len(s.Site.Hosts))
	for i, h := range s.Site.Hosts {
		out[i] = h.Name
	}
	return out
}

// Variant returns the named variant.
func (s Scenario) Variant(name string) (Variant, error) {
	i := slices.IndexFunc(s.Variants, func(v Variant) bool { return v.Name == name })
	if i < 0 {
		return Variant{}, fmt.Errorf("scenario %s has no variant %q", s.Name, name)
	}
	return s.Variants[i], nil
}

// quiet are the gocrawl settings every run shares: colly obeys no
// robots.txt by default, and the bench measures crawling, not logging.
func quiet(extra map[string]any) map[string]any {
	m := map[string]any{"ROBOTSTXT_OBEY": false, "LOG_LEVEL": "ERROR", "LOGSTATS_INTERVAL": 0, "STATS_DUMP": false,
		"PROGRESS_DISPLAY": "off", "DOWNLOAD_TIMEOUT": 30}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

var latency = simsite.LatencyConfig{Kind: simsite.LatencyUniform, Min: 5 * time.Millisecond, Max: 20 * time.Millisecond}

// strictLimit is the strict host of the two-host experiment (docs/metrics.md): a
// per-client token bucket of 10 requests/s with burst 5, answering 429
// with Retry-After in seconds.
var strictLimit = simsite.LimitConfig{Rate: 10, Burst: 5, Status: http.StatusTooManyRequests, RetryAfter: simsite.RetryAfterSeconds}

// StrictRate is the rate (requests/s) the strict host allows.
const StrictRate = 10.0

// All returns the scenarios, in order.
func All() []Scenario {
	return []Scenario{
		{
			Name:  "S1",
			About: "raw throughput: 20,000 pages, one host, no limits, concurrency 64",
			Site: simsite.Config{Hosts: []simsite.HostConfig{{Name: "one", Seed: 1,
				Pages: simsite.PagesConfig{Count: 20000, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}}}},
			Concurrency: 64,
			Variants: []Variant{
				{Name: "bare", Crawler: "bare"},
				{Name: "gocrawl", Crawler: "gocrawl", Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
				{Name: "gocrawl-follow", Crawler: "gocrawl", Spider: "follow", Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
				{Name: "gocrawl-follow-nospill", Crawler: "gocrawl", Spider: "follow", Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0, "SCHEDULER_MEMORY_MAX_REQUESTS": 0})},
				{Name: "gocrawl-follow-jobdir", Crawler: "gocrawl", Spider: "follow", JobDir: true, Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
				// The follow crawl archived as WARC (docs/archive.md).
				{Name: "gocrawl-follow-warc", Crawler: "gocrawl", Spider: "follow", Warc: true, Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
				// The same with the records stored uncompressed.
				{Name: "gocrawl-follow-warc-store", Crawler: "gocrawl", Spider: "follow", Warc: true, Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0, "WARC_GZIP_LEVEL": 0})},
				{Name: "colly", Crawler: "colly"},
				// The bare loop on fasthttp's client instead of net/http's:
				// how much of the bare loop's cost is its HTTP client
				// (column bare-fasthttp, ratio fasthttp/bare).
				{Name: "bare-fasthttp", Crawler: "bare-fasthttp"},
				// The follow crawl with that client under the downloader.
				{Name: "gocrawl-follow-fasthttp", Crawler: "gocrawl", Spider: "follow", FastHTTP: true, Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
			},
		},
		{
			Name:  "S1F",
			About: "items into feeds: S1's 20,000 pages with the follow spider (one item a page) into a jsonl file, SQLite and PostgreSQL; concurrency 64",
			Site: simsite.Config{Hosts: []simsite.HostConfig{{Name: "one", Seed: 1,
				Pages: simsite.PagesConfig{Count: 20000, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}}}},
			Concurrency: 64,
			Variants: []Variant{
				{Name: "gocrawl-follow-jsonl", Crawler: "gocrawl", Spider: "follow", Feed: "jsonl", Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
				{Name: "gocrawl-follow-sqlite", Crawler: "gocrawl", Spider: "follow", Feed: "sqlite", Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
				{Name: "gocrawl-follow-postgresql", Crawler: "gocrawl", Spider: "follow", Feed: "postgresql", Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
			},
		},
		{
			Name:  "S1M",
			About: "memory curve: 1,000,000 pages, one host, no limits, concurrency 64; RSS every 100,000 pages",
			Site: simsite.Config{Hosts: []simsite.HostConfig{{Name: "one", Seed: 1,
				Pages: simsite.PagesConfig{Count: 1000000, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}}}},
			Concurrency: 64,
			RSSEvery:    100000,
			Variants: []Variant{
				{Name: "gocrawl-follow", Crawler: "gocrawl", Spider: "follow", Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
				{Name: "gocrawl-follow-jobdir", Crawler: "gocrawl", Spider: "follow", JobDir: true, Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0})},
				// The whole frontier in memory, as before the queue spilled
				// past SCHEDULER_MEMORY_MAX_REQUESTS: the cost of spilling.
				{Name: "gocrawl-follow-nospill", Crawler: "gocrawl", Spider: "follow", Settings: quiet(map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0, "SCHEDULER_MEMORY_MAX_REQUESTS": 0})},
			},
		},
		{
			Name:  "S2",
			About: "two hosts, 500 pages each: strict (10 req/s, burst 5, 429 + Retry-After) and lenient; concurrency 50",
			Site: simsite.Config{Hosts: []simsite.HostConfig{
				{Name: "strict", Seed: 2, Pages: simsite.PagesConfig{Count: 500, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}, Latency: latency, Limit: strictLimit},
				{Name: "lenient", Seed: 1, Pages: simsite.PagesConfig{Count: 500, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}, Latency: latency},
			}},
			Concurrency: 50,
			Variants: []Variant{
				{Name: "gocrawl", Crawler: "gocrawl", Settings: quiet(nil)},
				{Name: "gocrawl-rampup", Crawler: "gocrawl", Settings: quiet(map[string]any{"THROTTLING_SCOPES": map[string]any{"$strict": map[string]any{"rampup": true}}})},
				{Name: "colly", Crawler: "colly", CollyDelay: 100 * time.Millisecond},
			},
		},
		{
			Name:  "S2-alone",
			About: "the lenient host of S2 alone (its time alone, for the 1.25x target); concurrency 50",
			Site: simsite.Config{Hosts: []simsite.HostConfig{
				{Name: "lenient", Seed: 1, Pages: simsite.PagesConfig{Count: 500, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}, Latency: latency},
			}},
			Concurrency: 50,
			Variants: []Variant{
				{Name: "gocrawl", Crawler: "gocrawl", Settings: quiet(nil)},
				{Name: "gocrawl-rampup", Crawler: "gocrawl", Settings: quiet(nil)},
				{Name: "colly", Crawler: "colly", CollyDelay: 100 * time.Millisecond},
			},
		},
		{
			Name:  "S3",
			About: "Retry-After honoured: 100 pages, 10 req/s burst 5, 429 with Retry-After: 2; concurrency 16",
			Site: simsite.Config{Hosts: []simsite.HostConfig{
				{Name: "retry", Seed: 4, Pages: simsite.PagesConfig{Count: 100, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}, Latency: latency,
					Limit: simsite.LimitConfig{Rate: 10, Burst: 5, Status: http.StatusTooManyRequests, RetryAfter: simsite.RetryAfterSeconds, RetryAfterValue: 2 * time.Second}},
			}},
			Concurrency: 16,
			Variants: []Variant{
				{Name: "gocrawl", Crawler: "gocrawl", Settings: quiet(nil)},
				{Name: "colly", Crawler: "colly", CollyDelay: 100 * time.Millisecond},
			},
		},
		s4("S4-alone", false),
		s4("S4-mixed", true),
		broad("S4-broad", 2000, 50),
		// The same on a busy machine, or for a quick look.
		broad("S4-broad-small", 500, 20),
		// The fd-budget case: run it under ulimit -n 1024.
		broad("S4-broad-10k", 10000, 20),
	}
}

// s4 is the head-of-line scenario: a fast host (3,000 pages, 10 ms) alone
// or with a slow host (200 pages, 1 s each); concurrency 16.
func s4(name string, mixed bool) Scenario {
	hosts := []simsite.HostConfig{{Name: "fast", Seed: 5, Pages: simsite.PagesConfig{Count: 3000, Graph: simsite.GraphTree, Fanout: 10, Size: 4096},
		Latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: 10 * time.Millisecond}}}
	about := "head-of-line: fast host alone (3,000 pages, 10 ms)"
	if mixed {
		// The front page answers at once and links every other page, so
		// 199 slow requests are queued from the start; each of them then
		// trickles its 4 KiB body over about a second.
		hosts = append(hosts, simsite.HostConfig{Name: "slow", Seed: 6, Pages: simsite.PagesConfig{Count: 200, Graph: simsite.GraphTree, Fanout: 200, Size: 4096},
			Faults: []simsite.FaultConfig{{Kind: simsite.FaultSlow, PathPrefix: "/page/", ChunkSize: 1024, Interval: 330 * time.Millisecond}}})
		about = "head-of-line: fast host with a slow host (front page links 199 pages of 1 s each)"
	}
	return Scenario{Name: name, About: about + "; concurrency 16", Site: simsite.Config{Hosts: hosts}, Concurrency: 16,
		Variants: []Variant{
			{Name: "gocrawl", Crawler: "gocrawl", Settings: quiet(nil)},
			{Name: "colly", Crawler: "colly"},
		}}
}

// Find returns the named scenario.
func Find(name string) (Scenario, error) {
	all := All()
	i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == name })
	if i < 0 {
		return Scenario{}, fmt.Errorf("unknown scenario %q", name)
	}
	return all[i], nil
}
