package scenario

import (
	"fmt"
	"time"
)

// Broad describes a broad crawl (S4-broad): many hosts, each on its own
// loopback address (127.1.x.y, all on one port), in four classes. The site
// is bench/cmd/broad's own server, not devtools/simsite: one listener per
// address, so that every host is a different IP as the server sees it and
// per-host politeness is measured where it matters, on arrival.
type Broad struct {
	// Hosts and Pages are the number of hosts and pages per host (the
	// root included).
	Hosts, Pages int
	// Latency is a normal host's answer time; SlowLatency a slow host's.
	Latency, SlowLatency time.Duration
	// StrictRate and StrictBurst are a strict host's token bucket (pages
	// only; robots.txt is free); a request beyond it gets 429 with
	// Retry-After: RetryAfter.
	StrictRate  float64
	StrictBurst int
	RetryAfter  time.Duration
	// CrawlDelay is the Crawl-delay of the robots.txt of the crawl-delay
	// hosts.
	CrawlDelay time.Duration
	// Delay is the crawler's DOWNLOAD_DELAY (and Colly's per-host delay).
	Delay time.Duration
}

// Host classes of a broad site, by host index: of every 20 hosts, two
// are slow, one strict and one has a Crawl-delay (10 %, 5 %, 5 %); the
// rest are normal.
const (
	ClassNormal     = "normal"
	ClassSlow       = "slow"
	ClassStrict     = "strict"
	ClassCrawlDelay = "crawl-delay"
)

// Class returns the class of host i.
func (b Broad) Class(i int) string {
	switch i % 20 {
	case 1, 11:
		return ClassSlow
	case 5:
		return ClassStrict
	case 15:
		return ClassCrawlDelay
	}
	return ClassNormal
}

// HostName is the name of host i ("h0042"); Addr its loopback address.
func (b Broad) HostName(i int) string { return fmt.Sprintf("h%05d", i) }

// Addr is host i's address: 127.1.(i/250).(i%250+1).
func (b Broad) Addr(i int) string { return fmt.Sprintf("127.1.%d.%d", i/250, i%250+1) }

// Interval is the least time between two pages of a host of class c that
// keeps every rule: the delay, the Crawl-delay, the strict host's rate.
func (b Broad) Interval(class string) time.Duration {
	switch class {
	case ClassStrict:
		return max(b.Delay, time.Duration(float64(time.Second)/b.StrictRate))
	case ClassCrawlDelay:
		return max(b.Delay, b.CrawlDelay)
	}
	return b.Delay
}

// MinDelay is the delay the crawler must keep between two requests to a
// host of class c: the configured one, or the Crawl-delay.
func (b Broad) MinDelay(class string) time.Duration {
	if class == ClassCrawlDelay {
		return max(b.Delay, b.CrawlDelay)
	}
	return b.Delay
}

// PhysicalLimit is the slowest host's minimal time: its pages at its
// interval, the last one answered after its latency.
func (b Broad) PhysicalLimit() time.Duration {
	var worst time.Duration
	for _, c := range []string{ClassNormal, ClassSlow, ClassStrict, ClassCrawlDelay} {
		lat := b.Latency
		if c == ClassSlow {
			lat = b.SlowLatency
		}
		worst = max(worst, time.Duration(b.Pages-1)*b.Interval(c)+lat)
	}
	return worst
}

// broad is the S4-broad family: hosts x pages, the classes of issue's
// broad crawl, DOWNLOAD_DELAY 1, concurrency 256, robots.txt obeyed.
func broad(name string, hosts, pages int) Scenario {
	b := &Broad{Hosts: hosts, Pages: pages, Latency: 10 * time.Millisecond, SlowLatency: time.Second,
		StrictRate: 0.5, StrictBurst: 1, RetryAfter: 2 * time.Second, CrawlDelay: 2 * time.Second, Delay: time.Second}
	set := quiet(map[string]any{"DOWNLOAD_DELAY": b.Delay.Seconds(), "ROBOTSTXT_OBEY": true, "LOG_LEVEL": "WARNING"})
	return Scenario{
		Name: name,
		About: fmt.Sprintf("broad crawl: %d loopback hosts x %d pages (80 %% 10 ms, 10 %% 1 s, 5 %% 0.5 req/s + 429 Retry-After 2, 5 %% Crawl-delay 2); DOWNLOAD_DELAY 1, robots.txt obeyed; concurrency 256",
			hosts, pages),
		Broad:       b,
		Concurrency: 256,
		Variants: []Variant{
			{Name: "gocrawl", Crawler: "gocrawl", Settings: set},
			// The built-in follow spider (spiders/follow): the links are
			// scanned from the body without building an HTML tree, and
			// one item per page is emitted (and dropped: no feed).
			{Name: "gocrawl-follow", Crawler: "gocrawl", Spider: "follow", Settings: set},
			// Colly: one LimitRule per host (Parallelism 1, the delay),
			// robots.txt obeyed.
			{Name: "colly", Crawler: "colly", CollyDelay: b.Delay},
		},
	}
}
