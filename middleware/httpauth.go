package middleware

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterDownloader("HttpAuth", newHTTPAuth) }

// BasicAuth are HTTP Basic credentials and the domain they may be sent to.
type BasicAuth struct {
	User, Pass string
	// Domain limits where the credentials are sent: that domain and its
	// subdomains. "" means the host of the spider's first start request
	// (the first one its Start yields), decided before anything is
	// fetched, so it does not depend on which response arrives first;
	// until the crawl has a start request, credentials go nowhere. "*"
	// means every domain (only for crawls that never leave the site that
	// asked for the credentials).
	Domain string
}

// BasicAuther is implemented by spiders that log in with HTTP Basic auth,
// Scrapy's http_user, http_pass and http_auth_domain attributes.
type BasicAuther interface {
	BasicAuth() BasicAuth
}

// HTTPAuth (the "HttpAuth" downloader middleware) adds an Authorization:
// Basic header to requests, from the spider's BasicAuth (sent only to its
// domain and subdomains) or from the request's http_user/http_pass meta
// (sent with that request only, and dropped by Redirect when the host
// changes). A request that already has an Authorization header keeps it.
// Credentials are never logged.
type HTTPAuth struct {
	auth BasicAuth
	has  bool

	mu     sync.RWMutex
	domain string // "" until bound (empty BasicAuth.Domain)
}

func newHTTPAuth(c *spider.Crawler) (Downloader, error) {
	if !c.Settings.Bool("HTTPAUTH_ENABLED") {
		return nil, nil
	}
	m := &HTTPAuth{}
	if a, ok := c.Spider.(BasicAuther); ok {
		m.auth, m.has = a.BasicAuth(), true
		if m.auth.User == "" && m.auth.Pass == "" {
			m.has = false
		}
		if strings.Contains(m.auth.Domain, "/") {
			return nil, fmt.Errorf("BasicAuth domain %q: want a domain such as example.com, not a URL", m.auth.Domain)
		}
		m.domain = normalizeHost(m.auth.Domain)
	}
	return m, nil
}

// ObserveStart implements StartObserver: credentials without a domain are
// bound to the host of the crawl's first start request.
func (m *HTTPAuth) ObserveStart(req *spider.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.domain == "" && req != nil && req.URL != nil {
		m.domain = normalizeHost(req.URL.Hostname())
	}
}

// Domain returns where the spider's credentials are sent ("" while not
// bound yet).
func (m *HTTPAuth) Domain() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.domain
}

// WrapFetcher implements Downloader.
func (m *HTTPAuth) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if req.Header.Get("Authorization") != "" {
			return next.Fetch(ctx, req)
		}
		user, uok := req.Get(MetaHTTPUser).(string)
		pass, pok := req.Get(MetaHTTPPass).(string)
		switch {
		case uok || pok:
		case m.has && m.allowed(req):
			user, pass = m.auth.User, m.auth.Pass
		default:
			return next.Fetch(ctx, req)
		}
		hr := http.Request{Header: http.Header{}}
		hr.SetBasicAuth(user, pass)
		if req.Header == nil {
			req.Header = http.Header{}
		}
		req.Header.Set("Authorization", hr.Header.Get("Authorization"))
		return next.Fetch(ctx, req)
	})
}

func (m *HTTPAuth) allowed(req *spider.Request) bool {
	domain := m.Domain()
	switch domain {
	case "":
		return false // not bound yet: never guess
	case "*":
		return true
	}
	host := normalizeHost(req.URL.Hostname())
	if net.ParseIP(host) != nil || net.ParseIP(domain) != nil {
		return host == domain
	}
	return host == domain || strings.HasSuffix(host, "."+domain)
}

func normalizeHost(h string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
}
