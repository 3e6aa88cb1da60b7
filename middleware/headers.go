package middleware

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() {
	RegisterDownloader("DefaultHeaders", newDefaultHeaders)
	RegisterDownloader("UserAgent", newUserAgent)
	settings.Register(settings.Def{Name: "DOWNLOADER_MIDDLEWARES", Type: settings.Map, Default: map[string]any{},
		Doc: "Downloader middlewares by registered name -> order, merged over DOWNLOADER_MIDDLEWARES_BASE (null disables)."})
	settings.Register(settings.Def{Name: "DOWNLOADER_MIDDLEWARES_BASE", Type: settings.Map, Default: map[string]any{
		"DefaultHeaders": 400,
		"UserAgent":      500,
	}, Doc: "Built-in downloader middlewares and their orders."})
	settings.Register(settings.Def{Name: "SPIDER_MIDDLEWARES", Type: settings.Map, Default: map[string]any{},
		Doc: "Spider middlewares by registered name -> order, merged over SPIDER_MIDDLEWARES_BASE (null disables)."})
	settings.Register(settings.Def{Name: "SPIDER_MIDDLEWARES_BASE", Type: settings.Map, Default: map[string]any{},
		Doc: "Built-in spider middlewares and their orders."})
}

// newDefaultHeaders adds DEFAULT_REQUEST_HEADERS to requests that do not
// set them.
func newDefaultHeaders(c *spider.Crawler) (Downloader, error) {
	h := http.Header{}
	for k, v := range c.Settings.Map("DEFAULT_REQUEST_HEADERS") {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("DEFAULT_REQUEST_HEADERS: header %q: value must be a string, got %T", k, v)
		}
		h.Set(k, s)
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
		if req.Header == nil {
			req.Header = http.Header{}
		}
		req.Header[k] = v
	}
}
