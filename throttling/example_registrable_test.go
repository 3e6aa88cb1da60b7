package throttling_test

import (
	"context"
	"strings"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// The built-in RegistrableDomainManager throttles every subdomain of a
// registrable domain together (the first approach of the "Alternative
// domain throttling" example of Scrapy's throttling design, PR #6931).
// In gocrawl.yaml:
//
//	THROTTLING_MANAGER: RegistrableDomainManager
func Example_registrableDomainScopes() {
	t := exampleThrottler(map[string]any{"THROTTLING_MANAGER": "RegistrableDomainManager"})
	printScopes(t, "https://books.toscrape.com/", "https://toscrape.com/", "https://www.bbc.co.uk/news", "http://127.0.0.1:8080/")
	// Output:
	// https://books.toscrape.com/ -> [toscrape.com]
	// https://toscrape.com/ -> [toscrape.com]
	// https://www.bbc.co.uk/news -> [bbc.co.uk]
	// http://127.0.0.1:8080/ -> [127.0.0.1:8080]
}

// SubdomainManager gives a request one scope per registrable domain and
// per higher-level subdomain (the second approach of that example).
type SubdomainManager struct {
	*throttling.DefaultManager
}

func (m *SubdomainManager) Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error) {
	host := req.URL.Hostname()
	reg := throttling.RegistrableDomain(host)
	if reg == host || !strings.HasSuffix(host, "."+reg) {
		return m.DefaultManager.Scopes(ctx, req)
	}
	scopes := throttling.AddScope(nil, reg, 0)
	parts := strings.Split(strings.TrimSuffix(host, "."+reg), ".")
	for i := range parts {
		scopes = throttling.AddScope(scopes, strings.Join(parts[i:], ".")+"."+reg, 0)
	}
	return scopes, nil
}

func init() {
	throttling.RegisterManager("SubdomainManager", func(d throttling.ManagerDeps) (throttling.Manager, error) {
		return &SubdomainManager{DefaultManager: d.Default()}, nil
	})
}

// Each request is sent only when all its scopes allow it, so books and
// quotes can reach 24 and 16 concurrent requests, but never 40 together:
// toscrape.com caps them at 32. In gocrawl.yaml:
//
//	THROTTLING_MANAGER: SubdomainManager
//	THROTTLING_SCOPES:
//	  toscrape.com: {concurrency: 32}
//	  books.toscrape.com: {concurrency: 24}
//	  quotes.toscrape.com: {concurrency: 16}
func Example_subdomainScopes() {
	t := exampleThrottler(map[string]any{
		"THROTTLING_MANAGER": "SubdomainManager",
		"THROTTLING_SCOPES": map[string]any{
			"toscrape.com":        map[string]any{"concurrency": 32},
			"books.toscrape.com":  map[string]any{"concurrency": 24},
			"quotes.toscrape.com": map[string]any{"concurrency": 16},
		},
	})
	printScopes(t, "https://books.toscrape.com/", "https://a.b.toscrape.com/", "https://toscrape.com/")
	// Output:
	// https://books.toscrape.com/ -> [books.toscrape.com toscrape.com]
	// https://a.b.toscrape.com/ -> [a.b.toscrape.com b.toscrape.com toscrape.com]
	// https://toscrape.com/ -> [toscrape.com]
}
