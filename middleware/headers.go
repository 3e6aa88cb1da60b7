package middleware

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// The DOWNLOADER_MIDDLEWARES_BASE and SPIDER_MIDDLEWARES_BASE maps (which
// built-ins run, and in what order) are in settings/defaults_middleware.go:
// adding a built-in to a chain is a one-line edit there.
func init() {
	RegisterDownloader("DefaultHeaders", newDefaultHeaders)
	RegisterDownloader("UserAgent", newUserAgent)
}

// newDefaultHeaders adds DEFAULT_REQUEST_HEADERS to requests that do not
// set them.
func newDefaultHeaders(c *spider.Crawler) (Downloader, error) {
	h, err := defaultHeaders(c.Settings)
	if err != nil {
		return nil, err
	}
	return DownloaderFunc(func(next Fetcher) Fetcher {
		return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
			setMissing(req, h)
			return next.Fetch(ctx, req)
		})
	}), nil
}

// newUserAgent sets the User-Agent header from USER_AGENT unless the
// request sets one.
func newUserAgent(c *spider.Crawler) (Downloader, error) {
	ua := c.Settings.String("USER_AGENT")
	if ua == "" {
		return nil, nil
	}
	h := http.Header{"User-Agent": {ua}}
	return DownloaderFunc(func(next Fetcher) Fetcher {
		return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
			setMissing(req, h)
			return next.Fetch(ctx, req)
		})
	}), nil
}

func setMissing(req *spider.Request, h http.Header) {
	for k, v := range h {
		if _, ok := req.Header[k]; ok {
			continue
		}
		if k == "Referer" && req.Referer != "" {
			continue // the Referer field is the request's own Referer header
		}
		if req.Header == nil {
			req.Header = http.Header{}
		}
		req.Header[k] = v
	}
}

// defaultHeaders reads DEFAULT_REQUEST_HEADERS.
func defaultHeaders(s *settings.Settings) (http.Header, error) {
	h := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(s.Map("DEFAULT_REQUEST_HEADERS"))) {
		v := s.Map("DEFAULT_REQUEST_HEADERS")[k]
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("DEFAULT_REQUEST_HEADERS: header %q: value must be a string, got %T", k, v)
		}
		h.Set(k, str)
	}
	return h, nil
}
