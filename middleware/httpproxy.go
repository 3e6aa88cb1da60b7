package middleware

import (
	"context"
	"fmt"
	"net/url"

	"golang.org/x/net/http/httpproxy"

	"github.com/gocrawl/gocrawl/internal/redact"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterDownloader("HttpProxy", newHTTPProxy) }

// HTTPProxy (the "HttpProxy" downloader middleware) routes requests through a proxy: the request's proxy meta
// ("http://user:pass@proxy:3128"), else the one the environment names for
// the request's scheme (HTTP_PROXY, HTTPS_PROXY and NO_PROXY, read once
// when the crawl starts, in upper or lower case; loopback hosts are never
// proxied). The chosen proxy is written to the proxy meta, which the
// downloader uses; credentials in the proxy URL become the
// Proxy-Authorization of the proxied request or CONNECT. An invalid proxy
// meta fails the request with an error naming it, with the password
// redacted: proxy credentials never appear in logs or stats.
//
// When a redirect changes the scheme, a proxy chosen from the environment
// is chosen again for the new scheme; a proxy meta set by the spider is kept.
type HTTPProxy struct {
	fromEnv func(*url.URL) (*url.URL, error)
}

func newHTTPProxy(c *spider.Crawler) (Downloader, error) {
	if !c.Settings.Bool("HTTPPROXY_ENABLED") {
		return nil, nil
	}
	return &HTTPProxy{fromEnv: httpproxy.FromEnvironment().ProxyFunc()}, nil
}

// WrapFetcher implements Downloader.
func (m *HTTPProxy) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if p, ok := req.Get(MetaProxy).(string); ok && p != "" {
			u, err := url.Parse(p)
			if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
				return nil, fmt.Errorf("invalid proxy meta %q: want http://[user:pass@]host:port", redact.String(p))
			}
			return next.Fetch(ctx, req)
		}
		p, err := m.fromEnv(req.URL)
		if err != nil {
			return nil, fmt.Errorf("proxy from environment: %v", err)
		}
		if p != nil {
			req.Set(MetaProxy, p.String())
			req.Set(metaSchemeProxy, true)
		}
		return next.Fetch(ctx, req)
	})
}
