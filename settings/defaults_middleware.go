package settings

// Middleware settings: the two chains and every built-in downloader and
// spider middleware, with Scrapy's names. The middlewares themselves live in
// package middleware (docs/middleware.md).
func init() {
	for _, d := range []Def{
		// The chains. To add a built-in to a chain, add one line to its
		// *_BASE map below.
		{Name: "DOWNLOADER_MIDDLEWARES", Type: Map, Default: map[string]any{},
			Doc: "Downloader middlewares by registered name -> order, merged over DOWNLOADER_MIDDLEWARES_BASE (null disables)."},
		{Name: "DOWNLOADER_MIDDLEWARES_BASE", Type: Map, Default: map[string]any{
			"Offsite":        50,
			"RobotsTxt":      100,
			"HttpAuth":       300,
			"DefaultHeaders": 400,
			"UserAgent":      500,
			"Retry":          550,
			"MetaRefresh":    580,
			"Redirect":       600,
			"Sessions":       690,
			"Cookies":        700,
			"ProxyPool":      740,
			"HttpProxy":      750,
			"HttpCache":      900,
			"Warc":           950,
		}, Doc: "Built-in downloader middlewares and their orders: lower orders see requests first and responses last."},
		{Name: "SPIDER_MIDDLEWARES", Type: Map, Default: map[string]any{},
			Doc: "Spider middlewares by registered name -> order, merged over SPIDER_MIDDLEWARES_BASE (null disables)."},
		{Name: "SPIDER_MIDDLEWARES_BASE", Type: Map, Default: map[string]any{
			"HttpError": 50,
			"Offsite":   500,
			"Referer":   700,
			"UrlLength": 800,
			"Depth":     900,
		}, Doc: "Built-in spider middlewares and their orders: lower orders see responses first and callback output last."},

		// Retry.
		{Name: "RETRY_ENABLED", Type: Bool, Default: true, Doc: "Retry failed downloads and responses with a RETRY_HTTP_CODES status."},
		{Name: "RETRY_TIMES", Type: NonNegative(Int), Default: 2, Doc: "Maximum retries per request, after the first attempt (the max_retry_times meta overrides it)."},
		{Name: "RETRY_REFUSED_TIMES", Type: NonNegative(Int), Default: 20, Doc: "Maximum reschedules per request refused by a host's rate limit (a 429 or 503 with Retry-After, when its status is in RETRY_HTTP_CODES); such refusals do not spend RETRY_TIMES."},
		{Name: "RETRY_HTTP_CODES", Type: IntList, Default: []int{500, 502, 503, 504, 522, 524, 408, 429}, Doc: "Response statuses that are retried."},
		{Name: "RETRY_EXCEPTIONS", Type: StringList, Default: []string{"DownloadFailedError", "DownloadTimeoutError", "ResponseDataLossError", "ProxyError"}, Doc: "Download error kinds (registered names) that are retried."},
		{Name: "RETRY_PRIORITY_ADJUST", Type: Int, Default: -1, Doc: "Added to a request's priority for each retry."},

		// Redirect and meta refresh.
		{Name: "REDIRECT_ENABLED", Type: Bool, Default: true, Doc: "Follow 301, 302, 303, 307 and 308 redirects (as new requests through the scheduler and throttling)."},
		{Name: "REDIRECT_MAX_TIMES", Type: NonNegative(Int), Default: 20, Doc: "Maximum redirects followed for one request."},
		{Name: "REDIRECT_PRIORITY_ADJUST", Type: Int, Default: 2, Doc: "Added to a request's priority when it is redirected."},
		{Name: "REDIRECT_MAX_DELAY", Type: NonNegative(Float), Default: 60.0, Doc: "Largest delay in seconds honoured before following a redirect: a 3xx Retry-After or a refresh delay (longer ones are capped)."},
		{Name: "METAREFRESH_ENABLED", Type: Bool, Default: true, Doc: "Follow <meta http-equiv=\"refresh\"> tags and Refresh headers."},
		{Name: "METAREFRESH_MAXDELAY", Type: NonNegative(Float), Default: 100.0, Doc: "Refreshes with a longer delay in seconds are not followed; the page goes to the callback."},
		{Name: "METAREFRESH_IGNORE_TAGS", Type: StringList, Default: []string{"noscript"}, Doc: "Meta refresh tags inside these elements are ignored."},

		// Cookies, auth, proxy.
		{Name: "COOKIES_ENABLED", Type: Bool, Default: true, Doc: "Keep cookies in a jar per spider (the cookiejar meta selects other sessions) and send them back."},
		{Name: "COOKIES_DEBUG", Type: Bool, Default: false, Doc: "Log cookies sent and received (names only; values are redacted)."},
		{Name: "HTTPAUTH_ENABLED", Type: Bool, Default: true, Doc: "Send HTTP Basic credentials from the spider (BasicAuther) or the http_user/http_pass meta, only to their domain."},
		{Name: "HTTPPROXY_ENABLED", Type: Bool, Default: true, Doc: "Route requests through the proxy meta or the HTTP_PROXY/HTTPS_PROXY/NO_PROXY environment."},

		// HTTP cache.
		{Name: "HTTPCACHE_ENABLED", Type: Bool, Default: false, Doc: "Store responses in a Pebble database and answer repeated requests from it, without sending them."},
		{Name: "HTTPCACHE_DIR", Type: String, Default: ".gocrawl/httpcache", Doc: "Folder of the HTTP cache; each spider gets a subfolder named after it."},
		{Name: "HTTPCACHE_EXPIRATION_SECS", Type: NonNegative(Float), Default: 0.0, Doc: "Cached responses older than this many seconds are not used (0 = never expire)."},
		{Name: "HTTPCACHE_IGNORE_HTTP_CODES", Type: IntList, Default: []int{}, Doc: "Response statuses never stored in the cache."},
		{Name: "HTTPCACHE_IGNORE_MISSING", Type: Bool, Default: false, Doc: "Drop requests that are not in the cache instead of downloading them (offline replays)."},
		{Name: "HTTPCACHE_POLICY", Type: String, Default: "DummyPolicy", Doc: "DummyPolicy (cache everything, never revalidate) or RFC9111Policy (HTTP caching rules; RFC2616Policy is an alias)."},
		{Name: "HTTPCACHE_ALWAYS_STORE", Type: Bool, Default: false, Doc: "RFC9111Policy: store responses even without caching headers (they are revalidated before use)."},
		{Name: "HTTPCACHE_IGNORE_RESPONSE_CACHE_CONTROLS", Type: StringList, Default: []string{}, Doc: "RFC9111Policy: Cache-Control directives of responses to ignore, e.g. no-store, no-cache."},

		// Spider side.
		{Name: "HTTPERROR_ALLOWED_CODES", Type: IntList, Default: []int{}, Doc: "Non-2xx statuses passed to callbacks anyway (the handle_httpstatus_list meta adds per request)."},
		{Name: "HTTPERROR_ALLOW_ALL", Type: Bool, Default: false, Doc: "Pass every response to callbacks, whatever its status."},
		{Name: "OFFSITE_ENABLED", Type: Bool, Default: true, Doc: "Drop requests to hosts outside the spider's allowed domains (subdomains included)."},
		{Name: "URLLENGTH_LIMIT", Type: NonNegative(Int), Default: 2083, Doc: "Drop requests from callbacks whose URL is longer than this (0 = no limit)."},
		{Name: "REFERER_ENABLED", Type: Bool, Default: true, Doc: "Set the Referer header of requests produced by callbacks."},
		{Name: "REFERRER_POLICY", Type: String, Default: "no-referrer-when-downgrade", Doc: "W3C referrer policy: no-referrer, no-referrer-when-downgrade, same-origin, origin, strict-origin, origin-when-cross-origin, strict-origin-when-cross-origin, unsafe-url."},
	} {
		Register(d)
	}
}
