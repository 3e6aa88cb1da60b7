package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/middleware/httpcache"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterDownloader("HttpCache", newHTTPCache) }

// HTTPCache (the "HttpCache" downloader middleware) answers requests from responses stored earlier in a Pebble
// database under HTTPCACHE_DIR/<spider name> (HTTPCACHE_ENABLED turns it
// on). HTTPCACHE_POLICY decides what is stored and when it is used:
// DummyPolicy (everything, always) or RFC9111Policy (HTTP caching rules,
// with revalidation). Entries older than HTTPCACHE_EXPIRATION_SECS are
// ignored (0 = never); statuses in HTTPCACHE_IGNORE_HTTP_CODES are never
// stored; with HTTPCACHE_IGNORE_MISSING, requests that are not in the cache
// are dropped (reason httpcache_missing) instead of downloaded. The
// dont_cache meta keeps a request away from the cache.
//
// Cached responses skip throttling: no request is sent. HTTPCache is an
// Answerer, so when a request is scheduled the engine asks whether it will
// be answered from the cache; if so the request gets no throttling scopes
// (it neither waits for a backing-off scope nor counts as a start) and it
// is flagged "cached" when answered. If the entry expired between that
// promise and the fetch, the request goes back through throttling instead
// of being sent (see MetaOffline). Revalidations (RFC9111Policy, stale
// entries) are real requests and are throttled like any other.
//
// Stats: httpcache/hit, httpcache/miss, httpcache/store,
// httpcache/uncacheable, httpcache/firsthand, httpcache/revalidate,
// httpcache/invalidate, httpcache/errorrecovery, httpcache/ignore.
type HTTPCache struct {
	store         httpcache.Store
	policy        httpcache.Policy
	expiration    time.Duration
	ignoreCodes   map[int]bool
	ignoreMissing bool
	clock         clock.Clock
	stats         *stats.Collector
	log           zerolog.Logger
	warned        atomic.Bool // a write failure was logged
}

func newHTTPCache(c *spider.Crawler) (Downloader, error) {
	if !c.Settings.Bool("HTTPCACHE_ENABLED") {
		return nil, nil
	}
	return NewHTTPCache(c, HTTPCacheOptions{})
}

// HTTPCacheOptions configure NewHTTPCache beyond the settings.
type HTTPCacheOptions struct {
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Store replaces the store under HTTPCACHE_DIR (opened with
	// httpcache.Open: the Pebble database of package pebblecache).
	Store httpcache.Store
}

// NewHTTPCache builds the HttpCache middleware from the crawl's settings
// (whatever HTTPCACHE_ENABLED says). Close it when done.
func NewHTTPCache(c *spider.Crawler, o HTTPCacheOptions) (*HTTPCache, error) {
	s := c.Settings
	m := &HTTPCache{
		expiration:    s.Seconds("HTTPCACHE_EXPIRATION_SECS"),
		ignoreCodes:   map[int]bool{},
		ignoreMissing: s.Bool("HTTPCACHE_IGNORE_MISSING"),
		clock:         o.Clock,
		stats:         c.Stats,
		log:           c.Log,
		store:         o.Store,
	}
	if m.clock == nil {
		m.clock = clock.Real
	}
	for _, code := range s.Ints("HTTPCACHE_IGNORE_HTTP_CODES") {
		m.ignoreCodes[code] = true
	}
	policy, err := cachePolicy(s)
	if err != nil {
		return nil, err
	}
	m.policy = policy
	if m.store == nil {
		dir := s.String("HTTPCACHE_DIR")
		if dir == "" {
			return nil, errors.New("HTTPCACHE_DIR is empty")
		}
		name := "spider"
		if c.Spider != nil {
			name = c.Spider.Name()
		}
		st, err := httpcache.Open(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		m.store = st
	}
	return m, nil
}

// Close closes the cache database.
func (m *HTTPCache) Close(context.Context) error { return m.store.Close() }

// writeFailed counts a failed cache write and logs the first: the crawl
// goes on without storing (a full disk under the cache must not stop it).
func (m *HTTPCache) writeFailed(err error) {
	m.inc("httpcache/errors/write")
	if m.warned.CompareAndSwap(false, true) {
		m.log.Error().Err(err).Msg("HTTP cache write failed; responses may no longer be cached (the crawl goes on)")
	}
}

func (m *HTTPCache) inc(key string) {
	if m.stats != nil {
		m.stats.Inc(key, 1)
	}
}

func (m *HTTPCache) usable(req *spider.Request) bool {
	return !metaBool(req, MetaDontCache) && m.policy.ShouldCacheRequest(req)
}

// meta returns the stored metadata of req, nil when missing or expired.
func (m *HTTPCache) meta(fp string, now time.Time) *httpcache.Meta {
	md, err := m.store.Meta(fp)
	if err != nil {
		if !errors.Is(err, httpcache.ErrNotFound) {
			m.log.Warn().Err(err).Msg("HTTP cache read failed; treating it as a miss")
		}
		return nil
	}
	if m.expiration > 0 && now.Sub(md.Stored) >= m.expiration {
		return nil
	}
	return md
}

// WillAnswer implements Answerer: true for a fresh entry, or for a missing
// one with HTTPCACHE_IGNORE_MISSING (it is dropped without being sent).
func (m *HTTPCache) WillAnswer(ctx context.Context, req *spider.Request) bool {
	if !m.usable(req) {
		return false
	}
	md := m.meta(httpcache.Fingerprint(req), m.clock.Now())
	if md == nil {
		return m.ignoreMissing
	}
	return m.policy.IsFresh(md, req, m.clock.Now())
}

// WrapFetcher implements Downloader.
func (m *HTTPCache) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if !m.usable(req) {
			return next.Fetch(ctx, req)
		}
		fp := httpcache.Fingerprint(req)
		now := m.clock.Now()
		var cached *httpcache.Entry
		if md := m.meta(fp, now); md != nil {
			e, err := m.store.Get(fp)
			if err == nil {
				cached = e
			}
		}
		if cached == nil {
			m.inc("httpcache/miss")
			if m.ignoreMissing {
				m.inc("httpcache/ignore")
				return nil, &DropError{Reason: "httpcache_missing", Err: fmt.Errorf("%s is not in the HTTP cache (HTTPCACHE_IGNORE_MISSING)", RedactedRequest(req))}
			}
		} else if m.policy.IsFresh(&cached.Meta, req, now) {
			m.inc("httpcache/hit")
			return cached.Response(req), nil
		}

		send := req
		if cached != nil {
			send = shallowWithHeader(req)
			m.policy.Conditional(&cached.Meta, send.Header)
		}
		res, err := next.Fetch(ctx, send)
		if err != nil {
			if cached != nil && ctx.Err() == nil && errkind.Of(err) != "" {
				m.inc("httpcache/errorrecovery")
				return cached.Response(req), nil
			}
			return nil, err
		}
		if cached != nil {
			if m.policy.IsValid(&cached.Meta, res, req) {
				m.inc("httpcache/revalidate")
				if res.Status == http.StatusNotModified {
					// RFC 9111 §4.3.4: update the stored headers.
					for k, v := range res.Header {
						cached.Header[k] = v
					}
					cached.Stored = m.clock.Now()
					if err := m.store.PutMeta(fp, &cached.Meta); err != nil {
						m.writeFailed(err)
					}
				}
				return cached.Response(req), nil
			}
			m.inc("httpcache/invalidate")
		}
		m.inc("httpcache/firsthand")
		if !m.ignoreCodes[res.Status] && m.policy.ShouldCacheResponse(res, req) {
			e := &httpcache.Entry{Meta: httpcache.Meta{URL: res.URL.String(), Status: res.Status,
				Header: res.Header.Clone(), Stored: m.clock.Now()}, Body: res.Body}
			if err := m.store.Put(fp, e); err != nil {
				m.writeFailed(err)
			} else {
				m.inc("httpcache/store")
			}
		} else {
			m.inc("httpcache/uncacheable")
		}
		return res, nil
	})
}

// cachePolicy returns the policy HTTPCACHE_POLICY names.
func cachePolicy(s *settings.Settings) (httpcache.Policy, error) {
	switch p := s.String("HTTPCACHE_POLICY"); p {
	case "DummyPolicy":
		return httpcache.DummyPolicy{}, nil
	case "RFC9111Policy", "RFC2616Policy":
		return httpcache.RFC9111Policy{AlwaysStore: s.Bool("HTTPCACHE_ALWAYS_STORE"),
			IgnoreResponseCacheControls: s.Strings("HTTPCACHE_IGNORE_RESPONSE_CACHE_CONTROLS")}, nil
	default:
		return nil, fmt.Errorf("HTTPCACHE_POLICY: unknown policy %q (want DummyPolicy or RFC9111Policy)", p)
	}
}
