package settings

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gocrawl/gocrawl/internal/version"
)

// networkList is a list of CIDR prefixes or single addresses.
var networkList = NewType("list of networks (CIDR such as 10.1.0.0/16, or addresses)", func(v any) (any, error) {
	l, err := StringList.Convert(v)
	if err != nil {
		return nil, err
	}
	for _, n := range l.([]string) {
		if _, err := netip.ParsePrefix(n); err == nil {
			continue
		}
		if _, err := netip.ParseAddr(n); err != nil {
			return nil, fmt.Errorf("%q is neither a network (10.1.0.0/16) nor an address (10.0.0.5)", n)
		}
	}
	return l, nil
})

// LogLevels are the values of LOG_LEVEL, most verbose first; WARN, FATAL,
// OFF and DISABLED are accepted as aliases (of WARNING, CRITICAL and NONE)
// and any case is fine.
var LogLevels = []string{"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "NONE"}

// logLevel is LOG_LEVEL's type: one of LogLevels, stored upper case.
var logLevel = NewType("log level", func(v any) (any, error) {
	s, err := String.Convert(v)
	if err != nil {
		return nil, err
	}
	up := strings.ToUpper(strings.TrimSpace(s.(string)))
	switch up {
	case "WARN":
		up = "WARNING"
	case "FATAL":
		up = "CRITICAL"
	case "OFF", "DISABLED":
		up = "NONE"
	}
	for _, l := range LogLevels {
		if up == l {
			return l, nil
		}
	}
	return nil, fmt.Errorf("%q is not a log level; use one of %s", s, strings.Join(LogLevels, ", "))
})

// logFormat is LOG_FORMAT's type: auto, console or json, stored lower case.
var logFormat = NewType(`"auto", "console" or "json"`, func(v any) (any, error) {
	s, err := String.Convert(v)
	if err != nil {
		return nil, err
	}
	switch low := strings.ToLower(strings.TrimSpace(s.(string))); low {
	case "auto", "console", "json":
		return low, nil
	case "":
		return "auto", nil
	}
	return nil, fmt.Errorf("%q is not a log format; use auto, console or json", s)
})

// Core crawler, engine and downloader settings. Each area of gocrawl keeps
// its settings in a defaults_<area>.go file of this package so that
// `gocrawl settings` can list every setting without linking the packages.
func init() {
	for _, d := range []Def{
		{Name: "BOT_NAME", Type: String, Default: "gocrawl", Doc: "Name of the bot, used in logs and the default User-Agent."},
		{Name: "USER_AGENT", Type: String, Default: "gocrawl/" + version.Version + " (+https://github.com/gocrawl/gocrawl)", Doc: "User-Agent header sent with every request unless a request sets its own."},
		{Name: "ROBOTSTXT_OBEY", Type: Bool, Default: true, Doc: "Fetch robots.txt once per host and drop requests it disallows."},
		{Name: "ROBOTSTXT_USER_AGENT", Type: String, Default: "", Doc: "User-agent matched against robots.txt rules; empty means the USER_AGENT's product token."},
		{Name: "LOG_LEVEL", Type: logLevel, Default: "INFO", Doc: "Minimum log level: DEBUG (adds one line per response), INFO, WARNING, ERROR, CRITICAL or NONE."},
		{Name: "LOG_FORMAT", Type: logFormat, Default: "auto", Doc: "Format of the log stream, end-of-crawl summary included: auto (console on a terminal, json otherwise), console (human-readable lines) or json (one JSON object per line)."},
		{Name: "LOG_FILE", Type: String, Default: "", Doc: "Append logs (and the end-of-crawl summary) to this file instead of standard error; its format is json unless LOG_FORMAT says console."},

		{Name: "CONCURRENT_REQUESTS", Type: NonNegative(Int), Default: 16, Doc: "Maximum number of requests in flight for the whole crawl (the global pool)."},
		{Name: "ADAPTIVE_GOMAXPROCS", Type: Bool, Default: true, Doc: "Adapt GOMAXPROCS to the CPU the crawl uses: one P fewer after 2 s that used less than 75 % of one P fewer, one more as soon as half a second used more than 85 % of those running, never above the value at the start. A crawl that mostly waits on its hosts' delays then spends no CPU on Go's scheduler looking for work for a spare P (about a fifth of a broad crawl's CPU). Off when the GOMAXPROCS environment variable is set; GOMAXPROCS gets its value back when the last crawl of the process ends. See docs/performance.md."},
		{Name: "CONCURRENT_ITEMS", Type: NonNegative(Int), Default: 100, Doc: "Maximum number of items processed by the item pipelines at once."},
		{Name: "MAX_STARTS_PER_SECOND", Type: NonNegative(Float), Default: 0.0, Doc: "Global start-rate limit: requests started per second, retries and redirects included (0 = off)."},
		{Name: "MAX_STARTS_BURST", Type: NonNegative(Int), Default: 1, Doc: "How many starts MAX_STARTS_PER_SECOND lets through at once (token bucket size)."},

		{Name: "DOWNLOAD_TIMEOUT", Type: NonNegative(Float), Default: 180.0, Doc: "Seconds before a download is abandoned with DownloadTimeoutError."},
		{Name: "DOWNLOAD_MAXSIZE", Type: NonNegative(Int), Default: 1 << 30, Doc: "Maximum response body size in bytes, after decompression; larger responses are cancelled (0 = no limit)."},
		{Name: "DOWNLOAD_MEMORY_BUDGET", Type: NonNegative(Int), Default: 0, Doc: "Bytes that response bodies may hold in memory crawl-wide, from the first byte read until the callback is done with the response (0 = a quarter of the memory available to the process: physical memory or the cgroup limit, whichever is smaller; 1 GiB when unknown). Downloads wait for room; one response may hold at most a third of it."},
		{Name: "DOWNLOAD_MAX_CONNECTIONS", Type: Int, Default: 0, Doc: "Connection budget: the most connections open at once, idle ones included; a dial beyond it waits for one to close instead of failing with \"too many open files\" (0 = the open-file limit, raised to its hard limit at start, less a quarter of it (at least 256) kept for the rest of the process; negative = no budget). Idle connections kept are the budget less CONCURRENT_REQUESTS, at least half of it. See docs/broad-crawls.md."},
		{Name: "DOWNLOAD_IDLE_TIMEOUT", Type: NonNegative(Float), Default: 120.0, Doc: "Seconds an idle connection is kept for its host's next request (at least 3 x DOWNLOAD_DELAY); the connections of a host whose throttling scope is evicted are closed at once."},
		{Name: "DOWNLOAD_WARNSIZE", Type: NonNegative(Int), Default: 32 << 20, Doc: "Response size in bytes above which a warning is logged (0 = never)."},
		{Name: "DOWNLOAD_FAIL_ON_DATALOSS", Type: Bool, Default: true, Doc: "Fail responses whose body is shorter than Content-Length with ResponseDataLossError; if false, pass them on flagged \"truncated\"."},
		{Name: "COMPRESSION_ENABLED", Type: Bool, Default: true, Doc: "Ask for and decode gzip, deflate and br responses."},
		{Name: "DNSCACHE_ENABLED", Type: Bool, Default: true, Doc: "Cache DNS lookups in memory (also the source of IP throttling scopes)."},
		{Name: "DNSCACHE_SIZE", Type: NonNegative(Int), Default: 10000, Doc: "Maximum number of host names kept in the DNS cache."},
		{Name: "DNS_TIMEOUT", Type: NonNegative(Float), Default: 60.0, Doc: "Seconds before a DNS lookup fails."},
		{Name: "SSRF_PROTECTION_ENABLED", Type: Bool, Default: false, Doc: "Refuse requests to loopback, link-local (169.254.169.254), private, shared, unspecified, broadcast and multicast addresses: on redirects and, after DNS, on every connection, and for rendered pages on every request the browser makes; refused requests are dropped (engine/dropped/blocked_address). See docs/security.md. Turn it on when a crawl follows links or redirects from untrusted sites on a machine that can reach internal services."},
		{Name: "SSRF_PROTECTION_ALLOW", Type: networkList, Default: []string{}, Doc: "Networks (CIDR such as 10.1.0.0/16) or addresses the SSRF protection lets through: the internal hosts a crawl is meant to reach."},
		{Name: "DEFAULT_REQUEST_HEADERS", Type: Map, Default: map[string]any{
			"Accept":          "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
			"Accept-Language": "en",
		}, Doc: "Headers added to every request that does not set them."},

		{Name: "SHUTDOWN_GRACE", Type: NonNegative(Float), Default: 5.0, Doc: "Seconds in-flight downloads get to finish after a graceful stop (first Ctrl-C, CLOSESPIDER_*) before they are cancelled; requests not yet sent, or cancelled, stay queued (a JOBDIR crawl sends them when it resumes)."},
		{Name: "CLOSESPIDER_TIMEOUT", Type: NonNegative(Float), Default: 0.0, Doc: "Close the spider after this many seconds (0 = never)."},
		{Name: "CLOSESPIDER_ITEMCOUNT", Type: NonNegative(Int), Default: 0, Doc: "Close the spider after this many items (0 = never)."},
		{Name: "CLOSESPIDER_PAGECOUNT", Type: NonNegative(Int), Default: 0, Doc: "Close the spider after this many responses (0 = never)."},
		{Name: "CLOSESPIDER_ERRORCOUNT", Type: NonNegative(Int), Default: 0, Doc: "Close the spider after this many errors (0 = never)."},

		{Name: "SCHEDULER", Type: String, Default: "ThrottlingAwareScheduler", Doc: "Registered scheduler: ThrottlingAwareScheduler (no head-of-line blocking) or Scheduler (engine-gated)."},
		{Name: "SCHEDULER_PRIORITY_QUEUE", Type: String, Default: "ThrottlingAwarePriorityQueue", Doc: "Registered priority queue: ThrottlingAwarePriorityQueue (yields only requests whose scopes can send) or PriorityQueue (plain priority order; the engine-gated Scheduler uses it in place of ThrottlingAwarePriorityQueue)."},
		{Name: "SCHEDULER_DEBUG", Type: Bool, Default: false, Doc: "Log scheduler decisions."},
		{Name: "SCHEDULER_MEMORY_MAX_REQUESTS", Type: NonNegative(Int), Default: 100000, Doc: "Without JOBDIR: how many queued requests are held in memory; past it further requests spill to a temporary on-disk queue (Pebble, in SCHEDULER_SPILL_DIR, deleted when the crawl ends) and come back in the same order. Requests with a closure callback always stay in memory. 0 = never spill. A request queued in memory costs roughly 400 bytes (a short URL, no headers). Spilling needs package pqueue/spillq linked (the gocrawl command and cli.Main programs link it); a program built on the engine without it keeps everything in memory at the default value and refuses a value set on purpose."},
		{Name: "SCHEDULER_SPILL_DIR", Type: String, Default: "", Doc: "Existing folder in which the queue spilled past SCHEDULER_MEMORY_MAX_REQUESTS is kept (a new gocrawl-spill-* sub-folder, removed at the end of the crawl, after a failed one too); empty = the system's temporary folder (os.TempDir(), $TMPDIR)."},
		{Name: "DUPEFILTER_DEBUG", Type: Bool, Default: false, Doc: "Log every filtered duplicate request, not only the first."},
		{Name: "DEPTH_LIMIT", Type: NonNegative(Int), Default: 0, Doc: "Maximum link depth from the start requests (0 = no limit); deeper requests are dropped by the scheduler and counted in scheduler/depth_limited."},
		{Name: "DEPTH_PRIORITY", Type: Int, Default: 0, Doc: "Adjust priority by depth: positive = breadth-first, negative = depth-first."},
		{Name: "DEPTH_STATS_VERBOSE", Type: Bool, Default: false, Doc: "Count requests per depth in the stats."},
		{Name: "JOBDIR", Type: String, Default: "", Doc: "Folder holding the crawl's persistent state, for pause and resume (empty = in memory)."},
		{Name: "JOBDIR_RESET", Type: Bool, Default: false, Doc: "Delete the job's state in JOBDIR and start over."},
		{Name: "JOBDIR_SYNC_DELAY", Type: NonNegative(Float), Default: 0.01, Doc: "Seconds the job's syncer waits after a write so that later writes share its fsync (0 = sync at once, each fsync costs CPU); a power failure can lose up to this much more of the newest writes, fetched again on resume; what a process crash can repeat keeps the bound it has with 0 (docs/jobs.md)."},

		{Name: "ITEM_PIPELINES", Type: Map, Default: map[string]any{}, Doc: "Item pipelines by registered name -> order (lower runs first; null disables)."},
		{Name: "FEEDS", Type: Map, Default: map[string]any{}, Doc: "Feed exports: file path -> {format: jsonl|json|csv, overwrite: bool}."},
		{Name: "FEED_EXPORT_FIELDS", Type: StringList, Default: []string{}, Doc: "Fields (and their order) written by feed exports; empty = all fields, CSV columns from the first item."},
		{Name: "FEED_EXPORT_INDENT", Type: NonNegative(Int), Default: 0, Doc: "Indentation for the json format (0 = compact)."},

		{Name: "LOGSTATS_INTERVAL", Type: NonNegative(Float), Default: 60.0, Doc: "Seconds between progress lines (0 = none)."},
		{Name: "STATS_DUMP", Type: Bool, Default: true, Doc: "Print the stats when the crawl ends."},
		{Name: "STATS_DUMP_FILE", Type: String, Default: "", Doc: "Write the end-of-crawl stats as JSON to this file (and per-scope CSV beside it)."},
		{Name: "METRICS_ADDR", Type: String, Default: "", Doc: "Serve Prometheus metrics on this address, e.g. 127.0.0.1:9410 (empty = off)."},
	} {
		Register(d)
	}
}
