package settings

// Proxy and session pool settings (docs/proxies.md).
func init() {
	for _, d := range []Def{
		{Name: "PROXY_LIST", Type: StringList, Default: []string{}, Doc: "Proxies to rotate requests over (http://[user:pass@]host:port), or the path of a file with one per line (# comments); empty = no pool."},
		{Name: "PROXY_BAN_CODES", Type: IntList, Default: []int{403, 407, 429}, Doc: "Response statuses that mean a proxy (or session) is refused: it is rested and the request retried on another one."},
		{Name: "PROXY_REST_MIN", Type: NonNegative(Float), Default: 30.0, Doc: "Seconds a proxy rests after its first failure or ban; doubled for each further one in a row."},
		{Name: "PROXY_REST_MAX", Type: NonNegative(Float), Default: 900.0, Doc: "Longest rest of a failing or banned proxy, in seconds."},
		{Name: "PROXY_RETRY_TIMES", Type: NonNegative(Int), Default: 3, Doc: "How many times a request refused by or failing on a proxy is retried on another one."},
		{Name: "CONCURRENT_REQUESTS_PER_PROXY", Type: NonNegative(Int), Default: 8, Doc: "Default concurrency of a proxy's throttling scope (proxy:HOST:PORT); 0 = unlimited."},
		{Name: "PROXY_DOWNLOAD_DELAY", Type: NonNegative(Float), Default: 0.0, Doc: "Default delay in seconds between two requests through one proxy."},
		{Name: "CONCURRENT_REQUESTS_PER_PROXY_HOST", Type: NonNegative(Int), Default: 0, Doc: "If positive, also limit the requests to one host through one proxy (scopes proxy:HOST:PORT|TARGET); per-host politeness stays global."},
		{Name: "PROXY_HOST_DOWNLOAD_DELAY", Type: NonNegative(Float), Default: 0.0, Doc: "Default delay in seconds of the per-host-per-proxy scopes."},

		{Name: "SESSION_POOL_SIZE", Type: NonNegative(Int), Default: 0, Doc: "Number of sessions (cookie jar + proxy + headers) requests rotate over; 0 = no session pool."},
		{Name: "SESSION_MAX_USES", Type: NonNegative(Int), Default: 50, Doc: "Retire a session after this many requests (0 = never)."},
		{Name: "SESSION_MAX_ERRORS", Type: NonNegative(Int), Default: 3, Doc: "Retire a session after this many failures in a row (a ban retires it at once)."},
		{Name: "SESSION_USER_AGENTS", Type: StringList, Default: []string{}, Doc: "User-Agent values handed to new sessions in turn (empty = USER_AGENT)."},
		{Name: "SESSION_HEADERS", Type: Map, Default: map[string]any{}, Doc: "Headers every session sends (name -> value), on top of the request's own."},
	} {
		Register(d)
	}
}
