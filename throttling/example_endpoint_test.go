package throttling_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// EndpointManager throttles each endpoint of api.toscrape.com as if it were
// its own domain (the "Endpoint-specific throttling" example of Scrapy's
// throttling design, PR #6931). CacheScopes computes a request's scopes
// once, like that design's scope_cache.
type EndpointManager struct {
	*throttling.DefaultManager
}

func (m *EndpointManager) Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error) {
	if req.Host() != "api.toscrape.com" {
		return m.DefaultManager.Scopes(ctx, req)
	}
	return throttling.Scopes{{Name: req.Host() + req.URL.Path}}, nil
}

func init() {
	throttling.RegisterManager("EndpointManager", func(d throttling.ManagerDeps) (throttling.Manager, error) {
		return throttling.CacheScopes(&EndpointManager{DefaultManager: d.Default()}), nil
	})
}

// In gocrawl.yaml:
//
//	THROTTLING_MANAGER: EndpointManager
//	THROTTLING_SCOPES:
//	  api.toscrape.com/fast-endpoint: {concurrency: 1000, delay: 0.08}
//	  api.toscrape.com/slow-endpoint: {delay: 5.0}
func Example_endpointScopes() {
	t := exampleThrottler(map[string]any{
		"THROTTLING_MANAGER": "EndpointManager",
		"THROTTLING_SCOPES": map[string]any{
			"api.toscrape.com/fast-endpoint": map[string]any{"concurrency": 1000, "delay": 0.08},
			"api.toscrape.com/slow-endpoint": map[string]any{"delay": 5.0},
		},
	})
	printScopes(t, "https://api.toscrape.com/fast-endpoint?id=1", "https://api.toscrape.com/slow-endpoint", "https://toscrape.com/")
	for _, s := range []string{"api.toscrape.com/fast-endpoint", "api.toscrape.com/slow-endpoint"} {
		c := t.ScopeConfigFor(s)
		fmt.Printf("%s: concurrency %d, delay %v\n", s, c.Concurrency, c.Delay.Round(time.Millisecond))
	}
	// Output:
	// https://api.toscrape.com/fast-endpoint?id=1 -> [api.toscrape.com/fast-endpoint]
	// https://api.toscrape.com/slow-endpoint -> [api.toscrape.com/slow-endpoint]
	// https://toscrape.com/ -> [toscrape.com]
	// api.toscrape.com/fast-endpoint: concurrency 1000, delay 80ms
	// api.toscrape.com/slow-endpoint: concurrency 1, delay 5s
}
