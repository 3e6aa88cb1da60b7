// Package simsite is a simulated website for testing and benchmarking
// crawlers: one Server serves several virtual hosts, each on its own
// 127.0.0.1 port (so a crawler sees distinct host:port origins without DNS),
// and records every request so a test can judge the crawler from the
// outside.
//
// Each host (HostConfig) generates a deterministic graph of HTML pages
// (tree, random from a seed, or one long chain; "/" links to every other
// page through the graph), or serves a Content handler of your own, and can
// add:
//
//   - latency before the headers (fixed, uniform, normal or exponential,
//     from the host's seed), optionally growing with the load beyond a
//     capacity (a server that slows down instead of refusing);
//   - a per-client rate limiter (token bucket whose rate may follow a
//     schedule, max concurrent requests, fixed window) answering 429 or
//     503 with Retry-After in seconds or as an HTTP-date, optional
//     RateLimit headers (the older draft's RateLimit-Limit/Remaining/Reset
//     or the current structured RateLimit and RateLimit-Policy), or a 200
//     "under maintenance" page (soft block);
//   - robots.txt with Crawl-delay, Disallow and Allow rules, or a status such
//     as 404 or 500;
//   - injected faults by probability and/or path prefix: connection reset,
//     truncated body, slow (trickled) body, never-ending body.
//
// In a test:
//
//	srv, err := simsite.Start(ctx, simsite.Config{Hosts: []simsite.HostConfig{
//		{Name: "strict", Limit: simsite.LimitConfig{Rate: 10, Burst: 5}},
//		{Name: "lenient"},
//	}})
//	if err != nil { t.Fatal(err) }
//	defer srv.Close()
//	crawl(srv.URL("strict")+"/", srv.URL("lenient")+"/")
//	st := srv.Stats()["strict"]
//	if st.RetryAfterViolations > 0 { t.Errorf(...) }
//
// Records, Records.Stats and Server.Stats give per-host counts by status,
// peak concurrent requests, the most starts in any 1 s and 100 ms window,
// the starts in the first 500 ms, and the requests received inside a
// Retry-After window previously announced to the same client.
//
// NewLocal builds the same site without listeners, served in-process by
// Server.Transport: inside a testing/synctest bubble it runs on fake time.
//
// Config carries yaml tags; LoadConfig reads one from YAML, and
// DefaultDemoConfig is a ready-made lenient/strict/polite site. The package
// depends on no other gocrawl package, so peers' crawlers can be benchmarked
// against it as well.
package simsite
