package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/middleware/httpcache"
	"github.com/gocrawl/gocrawl/middleware/httpcache/pebblecache"
	"github.com/gocrawl/gocrawl/spider"
)

// cacheServer counts hits per path and answers with the headers the test
// sets for it.
type cacheServer struct {
	*httptest.Server
	hits    atomic.Int64
	headers func(path string, r *http.Request) (int, http.Header)
}

func newCacheServer(t *testing.T, headers func(path string, r *http.Request) (int, http.Header)) *cacheServer {
	cs := &cacheServer{headers: headers}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cs.hits.Add(1)
		status, h := 200, http.Header{}
		if cs.headers != nil {
			status, h = cs.headers(r.URL.Path, r)
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		if status != http.StatusNotModified {
			fmt.Fprintf(w, "body %d of %s", n, r.URL.Path)
		}
	}))
	t.Cleanup(cs.Close)
	return cs
}

func newCache(t *testing.T, set map[string]any, clk clock.Clock) (*HTTPCache, *spider.Crawler) {
	t.Helper()
	c, _ := newCrawler(t, nil, set)
	st, err := pebblecache.Open("cache", pebblecache.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewHTTPCache(c, HTTPCacheOptions{Clock: clk, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, c
}

func TestHTTPCacheDummyPolicy(t *testing.T) {
	srv := newCacheServer(t, func(path string, r *http.Request) (int, http.Header) {
		if path == "/missing" {
			return 404, nil
		}
		return 200, http.Header{"Cache-Control": {"no-store"}} // ignored by DummyPolicy
	})
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, c := newCache(t, map[string]any{"HTTPCACHE_EXPIRATION_SECS": 60, "HTTPCACHE_IGNORE_HTTP_CODES": []int{404}}, clk)
	f := m.WrapFetcher(realFetcher())
	ctx := context.Background()
	get := func(path string) *spider.Response {
		t.Helper()
		res, err := f.Fetch(ctx, spider.MustRequest(srv.URL+path, nil))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	req := spider.MustRequest(srv.URL+"/a?y=2&x=1", nil)
	if m.WillAnswer(ctx, req) {
		t.Fatal("WillAnswer before anything is stored")
	}
	first := get("/a?y=2&x=1")
	if slices.Contains(first.Flags, "cached") {
		t.Fatal("first response flagged cached")
	}
	if !m.WillAnswer(ctx, spider.MustRequest(srv.URL+"/a?x=1&y=2#frag", nil)) {
		t.Fatal("WillAnswer false for a stored response (same URL, other query order)")
	}
	second := get("/a?x=1&y=2")
	if !slices.Contains(second.Flags, "cached") || string(second.Body) != string(first.Body) || srv.hits.Load() != 1 {
		t.Fatalf("second fetch: flags %v body %q, server hits %d", second.Flags, second.Body, srv.hits.Load())
	}
	// Expiry.
	clk.Advance(61 * time.Second)
	if m.WillAnswer(ctx, req) {
		t.Error("WillAnswer true for an expired entry")
	}
	if third := get("/a?x=1&y=2"); slices.Contains(third.Flags, "cached") || srv.hits.Load() != 2 {
		t.Errorf("expired entry served: flags %v hits %d", third.Flags, srv.hits.Load())
	}
	// Ignored codes are not stored.
	get("/missing")
	get("/missing")
	if srv.hits.Load() != 4 {
		t.Errorf("a 404 was served from the cache (hits %d)", srv.hits.Load())
	}
	// dont_cache.
	r := spider.MustRequest(srv.URL+"/a?x=1&y=2", nil).Set(MetaDontCache, true)
	if m.WillAnswer(ctx, r) {
		t.Error("WillAnswer true for dont_cache")
	}
	if res, _ := f.Fetch(ctx, r); slices.Contains(res.Flags, "cached") {
		t.Error("dont_cache request served from the cache")
	}
	for k, want := range map[string]float64{"httpcache/hit": 1, "httpcache/miss": 4, "httpcache/store": 2, "httpcache/uncacheable": 2} {
		if got := c.Stats.Get(k); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
}

func TestHTTPCacheIgnoreMissing(t *testing.T) {
	m, _ := newCache(t, map[string]any{"HTTPCACHE_IGNORE_MISSING": true}, nil)
	r := spider.MustRequest("http://127.0.0.1:1/never", nil)
	if !m.WillAnswer(context.Background(), r) {
		t.Error("WillAnswer false: a missing request is answered (dropped) without being sent")
	}
	_, err := m.WrapFetcher(FetcherFunc(func(context.Context, *spider.Request) (*spider.Response, error) {
		t.Fatal("request sent")
		return nil, nil
	})).Fetch(context.Background(), r)
	var d *DropError
	if !errors.As(err, &d) || d.Reason != "httpcache_missing" {
		t.Errorf("error = %v", err)
	}
}

func TestHTTPCacheRFC9111(t *testing.T) {
	date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := newCacheServer(t, func(path string, r *http.Request) (int, http.Header) {
		h := http.Header{"Date": {date.Format(http.TimeFormat)}}
		switch path {
		case "/maxage":
			h.Set("Cache-Control", "max-age=100")
		case "/etag":
			h.Set("ETag", `"v1"`)
			if r.Header.Get("If-None-Match") == `"v1"` {
				return 304, h
			}
		case "/nostore":
			h.Set("Cache-Control", "no-store, max-age=100")
		case "/plain":
		case "/flaky":
			h.Set("Cache-Control", "max-age=10")
			if r.Header.Get("If-Modified-Since") != "" {
				return 503, h
			}
			h.Set("Last-Modified", date.Add(-time.Hour).Format(http.TimeFormat))
		}
		return 200, h
	})
	clk := clock.NewFake(date)
	m, c := newCache(t, map[string]any{"HTTPCACHE_POLICY": "RFC9111Policy"}, clk)
	f := m.WrapFetcher(realFetcher())
	ctx := context.Background()
	fetch := func(path string, hdr ...string) (*spider.Response, int64) {
		t.Helper()
		before := srv.hits.Load()
		r := spider.MustRequest(srv.URL+path, nil)
		if len(hdr) == 2 {
			r.Header = http.Header{hdr[0]: {hdr[1]}}
		}
		res, err := f.Fetch(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return res, srv.hits.Load() - before
	}
	cached := func(r *spider.Response) bool { return slices.Contains(r.Flags, "cached") }

	fetch("/maxage")
	if r, sent := fetch("/maxage"); !cached(r) || sent != 0 {
		t.Errorf("fresh max-age entry: cached=%v sent=%d", cached(r), sent)
	}
	if r, sent := fetch("/maxage", "Cache-Control", "no-cache"); cached(r) || sent != 1 {
		t.Errorf("request no-cache: cached=%v sent=%d", cached(r), sent)
	}
	clk.Advance(101 * time.Second)
	if r, sent := fetch("/maxage"); cached(r) || sent != 1 {
		t.Errorf("stale max-age entry: cached=%v sent=%d", cached(r), sent)
	}

	fetch("/etag")
	if r, sent := fetch("/etag"); !cached(r) || sent != 1 || r.Status != 200 {
		t.Errorf("revalidated etag entry: cached=%v sent=%d status=%d", cached(r), sent, r.Status)
	}

	fetch("/nostore")
	if r, sent := fetch("/nostore"); cached(r) || sent != 1 {
		t.Errorf("no-store entry served: cached=%v sent=%d", cached(r), sent)
	}
	fetch("/plain")
	if r, sent := fetch("/plain"); cached(r) || sent != 1 {
		t.Errorf("response without caching headers served: cached=%v sent=%d", cached(r), sent)
	}

	fetch("/flaky")
	clk.Advance(20 * time.Second)
	if r, sent := fetch("/flaky"); !cached(r) || sent != 1 || r.Status != 200 {
		t.Errorf("5xx on revalidation: cached=%v sent=%d status=%d, want the stale entry", cached(r), sent, r.Status)
	}
	if c.Stats.Get("httpcache/revalidate") != 2 {
		t.Errorf("httpcache/revalidate = %v, want 2", c.Stats.Get("httpcache/revalidate"))
	}
}

func TestRFC9111Freshness(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	date := now.Add(-100 * time.Second).Format(http.TimeFormat)
	tests := []struct {
		name   string
		status int
		h      http.Header
		reqCC  string
		fresh  bool
	}{
		{"max-age not reached", 200, hdr("Date", date, "Cache-Control", "max-age=200"), "", true},
		{"max-age passed", 200, hdr("Date", date, "Cache-Control", "max-age=50"), "", false},
		{"Age header counts", 200, hdr("Date", date, "Cache-Control", "max-age=200", "Age", "150"), "", false},
		{"Expires", 200, hdr("Date", date, "Expires", now.Add(time.Minute).Format(http.TimeFormat)), "", true},
		{"invalid Expires", 200, hdr("Date", date, "Expires", "0"), "", false},
		{"heuristic from Last-Modified", 200, hdr("Date", date, "Last-Modified", now.Add(-10000*time.Second).Format(http.TimeFormat)), "", true},
		{"permanent redirect", 301, hdr("Date", date), "", true},
		{"temporary redirect", 302, hdr("Date", date), "", false},
		{"response no-cache", 200, hdr("Date", date, "Cache-Control", "no-cache, max-age=200"), "", false},
		{"request max-age", 200, hdr("Date", date, "Cache-Control", "max-age=200"), "max-age=50", false},
		{"request max-stale", 200, hdr("Date", date, "Cache-Control", "max-age=50"), "max-stale=100", true},
		{"max-stale vs must-revalidate", 200, hdr("Date", date, "Cache-Control", "max-age=50, must-revalidate"), "max-stale", false},
		{"request min-fresh", 200, hdr("Date", date, "Cache-Control", "max-age=200"), "min-fresh=150", false},
	}
	p := httpcache.RFC9111Policy{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := spider.MustRequest("http://127.0.0.1/", nil)
			if tt.reqCC != "" {
				req.Header = http.Header{"Cache-Control": {tt.reqCC}}
			}
			if got := p.IsFresh(&httpcache.Meta{Status: tt.status, Header: tt.h, Stored: now.Add(-100 * time.Second)}, req, now); got != tt.fresh {
				t.Errorf("IsFresh = %v, want %v", got, tt.fresh)
			}
		})
	}
}

func TestHTTPCacheBadSettings(t *testing.T) {
	c, _ := newCrawler(t, nil, map[string]any{"HTTPCACHE_ENABLED": true, "HTTPCACHE_POLICY": "Sometimes", "HTTPCACHE_DIR": t.TempDir()})
	if _, err := NewDownloaderChain(c, statusFetcher(200, nil)); err == nil ||
		!strings.Contains(err.Error(), `HTTPCACHE_POLICY: unknown policy "Sometimes"`) {
		t.Errorf("error = %v", err)
	}
}
