package throttling_test

import (
	"context"
	"net"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// IPManager adds the request's IP address as a second scope, resolving it
// when needed (the "Per-IP concurrency limiting" example of Scrapy's
// throttling design, PR #6931). The built-in
// CONCURRENT_REQUESTS_PER_IP does the same from the downloader's DNS
// cache, without resolving.
type IPManager struct {
	*throttling.DefaultManager
	Resolver *net.Resolver
}

func (m *IPManager) Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error) {
	scopes, err := m.DefaultManager.Scopes(ctx, req)
	if err != nil {
		return nil, err
	}
	addrs, err := m.Resolver.LookupHost(ctx, req.URL.Hostname())
	if err != nil || len(addrs) == 0 {
		return scopes, nil // unresolvable: the download will fail and back off
	}
	return throttling.AddScope(scopes, addrs[0], 0), nil
}

func init() {
	throttling.RegisterManager("IPManager", func(d throttling.ManagerDeps) (throttling.Manager, error) {
		return throttling.CacheScopes(&IPManager{DefaultManager: d.Default(), Resolver: net.DefaultResolver}), nil
	})
}

// In gocrawl.yaml:
//
//	THROTTLING_MANAGER: IPManager
//	CONCURRENT_REQUESTS_PER_IP: 4   # default concurrency of IP scopes
func Example_perIPScopes() {
	t := exampleThrottler(map[string]any{"THROTTLING_MANAGER": "IPManager", "CONCURRENT_REQUESTS_PER_IP": 4})
	printScopes(t, "http://127.0.0.1:8080/", "http://127.0.0.1:9090/a")
	// Output:
	// http://127.0.0.1:8080/ -> [127.0.0.1 127.0.0.1:8080]
	// http://127.0.0.1:9090/a -> [127.0.0.1 127.0.0.1:9090]
}
