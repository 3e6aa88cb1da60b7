package middleware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/syncbuf"
	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// testSpider is a spider with optional allowed domains.
type testSpider struct {
	spider.Base
}

func (*testSpider) Name() string { return "test" }
func (*testSpider) Parse(context.Context, *spider.Response, spider.Output) error {
	return nil
}

// newCrawler returns a crawler with settings overrides and a log buffer.
func newCrawler(t *testing.T, sp spider.Spider, set map[string]any) (*spider.Crawler, *syncbuf.Buffer) {
	t.Helper()
	s := settings.New()
	// RobotsTxt is tested on its own (robots_test.go); the other tests'
	// servers serve no robots.txt, so it stays out of their chains.
	base := maps.Clone(s.Map("DOWNLOADER_MIDDLEWARES_BASE"))
	delete(base, "RobotsTxt")
	if err := s.Set("DOWNLOADER_MIDDLEWARES_BASE", base, settings.SourceFile, "test"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMap(set, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	if sp == nil {
		sp = &testSpider{}
	}
	buf := &syncbuf.Buffer{}
	return &spider.Crawler{Spider: sp, Settings: s, Stats: stats.New(), Log: zerolog.New(buf).Level(zerolog.DebugLevel)}, buf
}

// only enables just the named built-in downloader middlewares, at their
// base orders.
func only(set map[string]any, names ...string) map[string]any {
	if set == nil {
		set = map[string]any{}
	}
	base := settings.New().Map("DOWNLOADER_MIDDLEWARES_BASE")
	dm := map[string]any{}
	for _, n := range names {
		dm[n] = base[n]
	}
	set["DOWNLOADER_MIDDLEWARES_BASE"] = dm
	return set
}

// realFetcher downloads for real (tests talk to 127.0.0.1 only).
func realFetcher() Fetcher {
	d := downloader.New(downloader.Options{Compression: true})
	return FetcherFunc(d.Fetch)
}

// chainFor builds the downloader chain of c around inner.
func chainFor(t *testing.T, c *spider.Crawler, inner Fetcher) *DownloaderChain {
	t.Helper()
	ch, err := NewDownloaderChain(c, inner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close(context.Background()) })
	return ch
}

// follow runs req through f, following reschedules (as the engine would,
// minus the scheduler) up to n times; it returns the final outcome and the
// requests it went through.
func follow(ctx context.Context, f Fetcher, req *spider.Request, n int) (*spider.Response, error, []*spider.Request) {
	seen := []*spider.Request{req}
	for range n {
		res, err := f.Fetch(ctx, req)
		var rs *RescheduleError
		if errors.As(err, &rs) && len(rs.Requests) == 1 {
			req = rs.Requests[0]
			seen = append(seen, req)
			continue
		}
		return res, err, seen
	}
	return nil, errors.New("too many reschedules"), seen
}

// staticFetcher answers every request with the same status.
func statusFetcher(status int, hdr http.Header) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if hdr == nil {
			hdr = http.Header{}
		}
		return &spider.Response{URL: req.URL, Status: status, Header: hdr.Clone(), Request: req}, nil
	})
}

// newEchoServer serves /login (303 to /home) and echoes every other
// request as "METHOD /path body=<body> cookie=<Cookie>".
func newEchoServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			http.Redirect(w, r, "/home", http.StatusSeeOther)
			return
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s body=%s cookie=%s", r.Method, r.URL.Path, b, r.Header.Get("Cookie"))
	}))
	t.Cleanup(srv.Close)
	return srv
}
