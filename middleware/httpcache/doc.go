// Package httpcache decides, with a Policy, which HTTP responses may be
// stored and when a stored one may answer a request without sending it,
// and defines the Store that keeps them (package pebblecache keeps them in
// a Pebble database and registers itself when imported). The HttpCache downloader middleware
// (package middleware) uses it; this package has no knowledge of chains
// or settings, so it can be reused and tested on its own.
//
// Two policies are provided: DummyPolicy stores every response and always
// answers from the cache (replaying a crawl offline, developing a spider
// without hitting the site again), and RFC9111Policy follows the HTTP
// caching rules (Cache-Control, Expires, heuristic freshness from
// Last-Modified, revalidation with If-None-Match and If-Modified-Since).
package httpcache
