package throttling

import (
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/settings"
)

func TestProxyScopeKinds(t *testing.T) {
	s := settings.New()
	for k, v := range map[string]any{
		"CONCURRENT_REQUESTS_PER_PROXY": 3, "PROXY_DOWNLOAD_DELAY": 0.5,
		"CONCURRENT_REQUESTS_PER_PROXY_HOST": 1, "PROXY_HOST_DOWNLOAD_DELAY": 2,
		"CONCURRENT_REQUESTS_PER_DOMAIN": 8, "DOWNLOAD_DELAY": 0,
		"THROTTLING_SCOPES": map[string]any{"proxy:10.0.0.9:3128": map[string]any{"concurrency": 20}},
	} {
		if err := s.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := ReadConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		kind  ScopeKind
		conc  int
		delay time.Duration
	}{
		{"proxy:10.0.0.1:3128", KindProxy, 3, 500 * time.Millisecond},
		{"proxy:10.0.0.1:3128|example.com", KindProxyHost, 1, 2 * time.Second},
		{"proxy:10.0.0.9:3128", KindProxy, 20, 500 * time.Millisecond},
		// The host's own scope is unchanged: politeness stays global.
		{"example.com", KindDomain, 8, 0},
		{"proxy:", KindOther, 1, 0},
	} {
		sc := cfg.Scope(tc.name)
		if KindOfScope(tc.name) != tc.kind || sc.Kind != tc.kind || sc.Concurrency != tc.conc || sc.Delay != tc.delay {
			t.Errorf("%s: kind %v concurrency %d delay %v; want %v %d %v", tc.name, sc.Kind, sc.Concurrency, sc.Delay, tc.kind, tc.conc, tc.delay)
		}
	}
}
