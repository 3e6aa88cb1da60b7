package throttling

import (
	"time"

	"github.com/gocrawl/gocrawl/settings"
)

// ProxyDefaults are the defaults of proxy scopes: one per proxy of the
// ProxyPool middleware ("proxy:HOST:PORT", KindProxy) and, with
// CONCURRENT_REQUESTS_PER_PROXY_HOST, one per proxy and host
// ("proxy:HOST:PORT|host", KindProxyHost). A THROTTLING_SCOPES entry of
// that name overrides them like any scope's. They add to the host's own
// scope, which stays global: a host gets CONCURRENT_REQUESTS_PER_DOMAIN
// requests at once however many proxies the crawl goes through.
type ProxyDefaults struct {
	// PerProxy is CONCURRENT_REQUESTS_PER_PROXY, Delay PROXY_DOWNLOAD_DELAY.
	PerProxy int
	Delay    time.Duration
	// PerProxyHost is CONCURRENT_REQUESTS_PER_PROXY_HOST, HostDelay
	// PROXY_HOST_DOWNLOAD_DELAY.
	PerProxyHost int
	HostDelay    time.Duration
}

func readProxyDefaults(s *settings.Settings) ProxyDefaults {
	return ProxyDefaults{
		PerProxy:     s.Int("CONCURRENT_REQUESTS_PER_PROXY"),
		Delay:        s.Seconds("PROXY_DOWNLOAD_DELAY"),
		PerProxyHost: s.Int("CONCURRENT_REQUESTS_PER_PROXY_HOST"),
		HostDelay:    s.Seconds("PROXY_HOST_DOWNLOAD_DELAY"),
	}
}

// of returns the default concurrency and delay of a proxy scope kind.
func (p ProxyDefaults) of(k ScopeKind) (int, time.Duration) {
	if k == KindProxyHost {
		return p.PerProxyHost, p.HostDelay
	}
	return p.PerProxy, p.Delay
}
