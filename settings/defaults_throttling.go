package settings

// Throttling settings, with the names and defaults of Scrapy's throttling
// design (scrapy/scrapy PR #6931); docs/throttling.md describes each.
func init() {
	for _, d := range []Def{
		{Name: "CONCURRENT_REQUESTS_PER_DOMAIN", Type: NonNegative(Int), Default: 8, Doc: "Maximum simultaneous requests per domain scope (0 = unlimited)."},
		{Name: "CONCURRENT_REQUESTS_PER_IP", Type: NonNegative(Int), Default: 0, Doc: "If positive, also limit simultaneous requests per resolved IP address (an IP throttling scope)."},
		{Name: "DOWNLOAD_DELAY", Type: NonNegative(Float), Default: 0.0, Doc: "Minimum seconds between two requests to the same domain scope (projects made by `gocrawl new` set 1)."},
		{Name: "RANDOMIZE_DOWNLOAD_DELAY", Type: OneOf(Bool, NonNegative(Float), FloatPair), Default: true, Doc: "Randomize delays: true = ±50%, a factor f = ±f, [low, high] = delay*(1+uniform(low, high)), false = off."},
		{Name: "THROTTLING_SCOPES", Type: Map, Default: map[string]any{}, Doc: "Per-scope configuration: scope -> {concurrency, min_concurrency, delay, jitter, quota, window, rampup, backoff, rate_control, manager, ignore_robots_txt}."},
		{Name: "THROTTLING_RATE_CONTROL", Type: Bool, Default: true, Doc: "Find and hold each scope's real rate limit inside the configured rules: pace at the rate a server accepts, measured from refusals with Retry-After, RateLimit headers (and bare refusals with rampup), and probe upward when quiet (per scope: rate_control)."},
		{Name: "THROTTLING_LATENCY_CONTROL", Type: Bool, Default: true, Doc: "With THROTTLING_RATE_CONTROL, also hold each scope's concurrency where more requests in flight stop adding throughput and only add latency (per scope: rate_control: {latency: ...})."},
		{Name: "THROTTLING_MANAGER", Type: String, Default: "ThrottlingManager", Doc: "Registered throttling manager (assigns scopes, interprets responses and errors)."},
		{Name: "THROTTLING_SCOPE_MANAGER", Type: String, Default: "ThrottlingScopeManager", Doc: "Registered scope manager used for each scope's backoff and rampup state."},
		{Name: "THROTTLING_SCOPE_CONCURRENCY", Type: NonNegative(Int), Default: 1, Doc: "Default concurrency of scopes that are neither domains nor IPs."},
		{Name: "THROTTLING_WINDOW", Type: NonNegative(Float), Default: 60.0, Doc: "Seconds after which throttling quotas reset."},
		{Name: "THROTTLING_SCOPE_LIMIT", Type: NonNegative(Int), Default: 100000, Doc: "Maximum scope states kept in memory; least-recently-used idle scopes are evicted (0 = no limit)."},
		{Name: "THROTTLING_SCOPE_MAX_IDLE", Type: NonNegative(Float), Default: 3600.0, Doc: "Seconds of inactivity after which a scope's state is evicted (0 = never)."},
		{Name: "THROTTLING_DEBUG", Type: Bool, Default: false, Doc: "Log every throttling decision (scope, delay, level, reason)."},
		{Name: "THROTTLING_ROBOTSTXT_OBEY", Type: Bool, Default: true, Doc: "Apply robots.txt Crawl-delay to the host's scope (needs ROBOTSTXT_OBEY)."},
		{Name: "THROTTLING_ROBOTSTXT_MAX_DELAY", Type: NonNegative(Float), Default: 60.0, Doc: "Largest Crawl-delay honoured, in seconds."},
		{Name: "ROBOTSTXT_ERROR_RETRY", Type: NonNegative(Float), Default: 300.0, Doc: "Seconds an origin whose robots.txt is unreachable (5xx, 429, network error) stays completely disallowed before robots.txt is fetched again (RFC 9309)."},
		{Name: "ROBOTSTXT_CACHE_SIZE", Type: NonNegative(Int), Default: 10000, Doc: "Maximum number of origins whose robots.txt is kept in memory (least recently used dropped first; 0 = no limit)."},
		{Name: "DELAYED_REQUESTS_WARN_THRESHOLD", Type: NonNegative(Int), Default: 500, Doc: "Warn when this many requests are held back by throttling outside the scheduler."},

		{Name: "BACKOFF_HTTP_CODES", Type: IntList, Default: []int{429, 502, 503, 504, 520, 521, 522, 523, 524}, Doc: "Response status codes that trigger backoff."},
		{Name: "BACKOFF_EXCEPTIONS", Type: StringList, Default: []string{"DownloadFailedError", "DownloadTimeoutError", "ResponseDataLossError"}, Doc: "Download error kinds (registered names) that trigger backoff."},
		{Name: "BACKOFF_DELAY_FACTOR", Type: NonNegative(Float), Default: 2.0, Doc: "Factor the delay is multiplied by on each backoff step."},
		{Name: "BACKOFF_MAX_DELAY", Type: NonNegative(Float), Default: 300.0, Doc: "Largest delay backoff reaches; also caps Retry-After and RateLimit-Reset."},
		{Name: "BACKOFF_MIN_DELAY", Type: NonNegative(Float), Default: 1.0, Doc: "Delay of the first backoff step, and the minimum delay during backoff."},
		{Name: "BACKOFF_JITTER", Type: OneOf(NonNegative(Float), FloatPair), Default: 0.1, Doc: "Random variation of backoff delays: f = ±f, [low, high] = delay*(1+uniform(low, high))."},
		{Name: "BACKOFF_RETRY_AFTER_PACING", Type: Bool, Default: true, Doc: "After a Retry-After or RateLimit-Reset delay, resume the scope at the send rate it had, evenly spaced, instead of releasing its whole concurrency at once; later server delays slow the pace, quiet BACKOFF_WINDOWs restore it."},
		{Name: "BACKOFF_WINDOW", Type: NonNegative(Float), Default: 60.0, Doc: "Quiet seconds after which a backed-off delay drops one step; also rampup's window."},
		{Name: "RAMPUP_BACKOFF_TARGET", Type: OneOf(NonNegative(Int), IntPair), Default: 1, Doc: "Backoff triggers per BACKOFF_WINDOW that rampup aims for; an integer or [low, high]."},

		{Name: "AUTOTHROTTLE_ENABLED", Type: Bool, Default: false, Deprecated: "throttling is always active; see docs/throttling.md, Migrating from AutoThrottle", Doc: "Deprecated: no equivalent, throttling is always active."},
		{Name: "AUTOTHROTTLE_START_DELAY", Type: NonNegative(Float), Default: 5.0, Deprecated: "use DOWNLOAD_DELAY", Doc: "Deprecated: maps to DOWNLOAD_DELAY."},
		{Name: "AUTOTHROTTLE_MAX_DELAY", Type: NonNegative(Float), Default: 60.0, Deprecated: "use BACKOFF_MAX_DELAY", Doc: "Deprecated: maps to BACKOFF_MAX_DELAY."},
		{Name: "AUTOTHROTTLE_TARGET_CONCURRENCY", Type: NonNegative(Float), Default: 1.0, Deprecated: `use rampup ("rampup": true in THROTTLING_SCOPES)`, Doc: "Deprecated: maps to rampup."},
		{Name: "AUTOTHROTTLE_DEBUG", Type: Bool, Default: false, Deprecated: "use THROTTLING_DEBUG", Doc: "Deprecated: maps to THROTTLING_DEBUG."},
	} {
		Register(d)
	}
}
