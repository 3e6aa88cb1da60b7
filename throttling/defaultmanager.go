package throttling

import (
	"context"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/downloader/dnscache"
	"github.com/gocrawl/gocrawl/spider"
)

// DefaultManager is the default THROTTLING_MANAGER ("ThrottlingManager"):
// one scope per host (Request.Host: lower-cased, with a non-default port),
// plus one per resolved IP when CONCURRENT_REQUESTS_PER_IP is positive.
// A response whose status is in a scope's backoff http_codes, or a
// download error of one of its backoff exceptions, is a trigger for that
// scope; Retry-After and RateLimit-Reset on a trigger response become a
// hard minimum (see ResponseDelay).
//
// Embed *DefaultManager in your own manager to change one aspect and keep
// the rest (see the package examples).
type DefaultManager struct {
	// Config is the throttling configuration (per-scope backoff codes).
	Config *Config
	// PerIP adds the request's resolved IP as a second scope.
	PerIP bool
	// DNS is where IPs are looked up (its cache only, never resolving).
	DNS *dnscache.Cache
	// Clock dates HTTP-date Retry-After values; nil means the real clock.
	Clock clock.Clock
}

// NewDefaultManager returns the default manager for cfg; dns may be nil
// (no IP scopes).
func NewDefaultManager(cfg *Config, dns *dnscache.Cache) *DefaultManager {
	return &DefaultManager{Config: cfg, PerIP: cfg.PerIP > 0, DNS: dns}
}

// Scopes implements Manager.
func (m *DefaultManager) Scopes(ctx context.Context, req *spider.Request) (Scopes, error) {
	host := req.Host()
	sc := Scopes{{Name: host}}
	if m.PerIP && m.DNS != nil {
		if ip, ok := m.DNS.Cached(req.URL.Hostname()); ok && ip != host {
			sc = AddScope(sc, ip, 0)
		}
	}
	return sc, nil
}

// ResponseDelay returns the delay res asks for: the larger of Retry-After
// (delta-seconds or HTTP-date) and RateLimit-Reset, capped at
// BACKOFF_MAX_DELAY; 0 when there is none (or it is 0, in the past or
// malformed), meaning a normal backoff step. It is the Go form of
// get_response_delay in Scrapy's throttling design (PR #6931).
func (m *DefaultManager) ResponseDelay(res *spider.Response) time.Duration {
	c := m.Clock
	if c == nil {
		c = clock.Real
	}
	return ServerDelay(res.Header, c.Now(), m.Config.Backoff.MaxDelay)
}

// ResponseBackoff implements Manager. Besides triggers, it gives the
// response's RateLimit headers (ParseRateLimit), on any response, to the
// request's host scope (Request.Host, like a robots.txt Crawl-delay): they
// describe the host's limit, not that of custom scopes.
func (m *DefaultManager) ResponseBackoff(ctx context.Context, res *spider.Response, scopes Scopes) (Feedback, error) {
	var fb Feedback
	var delay time.Duration = -1
	for _, s := range scopes {
		b := m.backoffOf(s.Name)
		if !b.Triggers(res.Status) {
			continue
		}
		if delay < 0 {
			delay = m.ResponseDelay(res)
		}
		if fb == nil {
			fb = Feedback{}
		}
		fb[s.Name] = ScopeFeedback{Trigger: true, Delay: min(delay, b.MaxDelay)}
	}
	if rl, ok := ParseRateLimit(res.Header); ok && res.Request != nil {
		if host := res.Request.Host(); scopes.Has(host) {
			if fb == nil {
				fb = Feedback{}
			}
			f := fb[host]
			f.RateLimit = &rl
			fb[host] = f
		}
	}
	return fb, nil
}

// ExceptionBackoff implements Manager.
func (m *DefaultManager) ExceptionBackoff(ctx context.Context, req *spider.Request, err error, scopes Scopes) (Feedback, error) {
	var fb Feedback
	for _, s := range scopes {
		b := m.backoffOf(s.Name)
		if !b.TriggersOn(err) {
			continue
		}
		if fb == nil {
			fb = Feedback{}
		}
		fb[s.Name] = ScopeFeedback{Trigger: true}
	}
	return fb, nil
}

func (m *DefaultManager) backoffOf(scope string) *BackoffConfig {
	if sc, ok := m.Config.scopes[scope]; ok {
		return &sc.Backoff
	}
	return &m.Config.Backoff
}
