package middleware

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/internal/redact"
	"github.com/gocrawl/gocrawl/middleware/proxypool"
	"github.com/gocrawl/gocrawl/middleware/session"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

func init() { RegisterDownloader("ProxyPool", newProxyPool) }

// Request meta keys of the ProxyPool middleware.
const (
	// MetaProxyUsed (string) is the label (HOST:PORT) of the pool's proxy
	// the request went through; set by ProxyPool, never holding
	// credentials.
	MetaProxyUsed = "proxy_used"
	// MetaProxyTried ([]any of labels) lists the proxies a request already
	// failed on or was refused by; its retries avoid them.
	MetaProxyTried = "proxy_tried"
	// MetaProxyRetryTimes (int) counts the retries on another proxy.
	MetaProxyRetryTimes = "proxy_retry_times"
)

// BanChecker is implemented by spiders that recognise refusals a status
// code does not show (a CAPTCHA page served as 200): the ProxyPool and
// Sessions middlewares treat a response for which IsBanned is true like
// a PROXY_BAN_CODES status. It must be quick and safe for concurrent use.
type BanChecker interface {
	IsBanned(res *spider.Response) bool
}

// proxyThrottler is what ProxyPool needs from the crawl's throttler (the
// Crawler's Throttler is a *throttling.Throttler in a crawl).
type proxyThrottler interface {
	Wait(now time.Time, scopes throttling.Scopes) time.Duration
	Admit(ctx context.Context, scopes throttling.Scopes) (time.Time, error)
	Done(ctx context.Context, req *spider.Request, scopes throttling.Scopes, sentAt time.Time, res *spider.Response, err error)
	NotSent(ctx context.Context, req *spider.Request, scopes throttling.Scopes, sentAt time.Time)
	DelayScope(scope string, d time.Duration)
}

// ProxyPool (the "ProxyPool" downloader middleware, order 740, on when
// PROXY_LIST is set) sends every request through one of the pool's
// proxies, in turn, skipping those that rest:
//
//   - the request waits for its proxy's throttling scope (proxy:HOST:PORT,
//     CONCURRENT_REQUESTS_PER_PROXY, PROXY_DOWNLOAD_DELAY; with
//     CONCURRENT_REQUESTS_PER_PROXY_HOST also proxy:HOST:PORT|host), after
//     the scheduler admitted it for its host's scopes; a proxy whose scope
//     has room is preferred;
//   - a download error through a proxy (it cannot be reached, breaks the
//     connection, times out) rests the proxy; so does a PROXY_BAN_CODES
//     status or the spider's BanChecker, which also holds the proxy's
//     scope for the rest (DelayScope), and the request is retried on
//     another proxy, up to PROXY_RETRY_TIMES times (the retry goes back
//     through the scheduler and throttling);
//   - when every proxy rests, the request goes back to the queue until the
//     first rest ends (throttling_delay): nothing is sent without a proxy;
//   - a request whose proxy meta the spider set keeps that proxy;
//   - with the Sessions middleware, a session keeps its proxy while the
//     proxy works.
//
// The proxy URL, credentials included, is given to the downloader on a
// copy of the request only: the request, its meta (proxy_used holds the
// label), logs and stats name proxies by HOST:PORT. Stats per proxy:
// proxy/<HOST:PORT>/requests, .../failures, .../bans; totals proxy/*.
type ProxyPool struct {
	pool     *proxypool.Pool
	thr      proxyThrottler
	banCodes map[int]bool
	ban      BanChecker
	retries  int
	perHost  bool
	stats    *stats.Collector
	log      zerolog.Logger
}

func newProxyPool(c *spider.Crawler) (Downloader, error) {
	s := c.Settings
	list := s.Strings("PROXY_LIST")
	if len(list) == 0 {
		return nil, nil
	}
	proxies, err := proxypool.Load(list)
	if err != nil {
		return nil, err
	}
	if len(proxies) == 0 {
		return nil, nil
	}
	restMin, restMax := s.Seconds("PROXY_REST_MIN"), s.Seconds("PROXY_REST_MAX")
	if restMin > restMax {
		return nil, fmt.Errorf("PROXY_REST_MIN (%v s) is above PROXY_REST_MAX (%v s)", restMin.Seconds(), restMax.Seconds())
	}
	m := &ProxyPool{
		pool:     proxypool.New(proxies, proxypool.Options{RestMin: restMin, RestMax: restMax}),
		banCodes: banCodes(s.Ints("PROXY_BAN_CODES")),
		retries:  s.Int("PROXY_RETRY_TIMES"),
		perHost:  s.Int("CONCURRENT_REQUESTS_PER_PROXY_HOST") > 0,
		stats:    c.Stats,
		log:      c.Log,
	}
	if m.stats == nil {
		m.stats = stats.New()
	}
	m.thr, _ = c.Throttler.(proxyThrottler)
	m.ban, _ = c.Spider.(BanChecker)
	c.Log.Info().Int("proxies", len(proxies)).Msg("proxy pool enabled: every request goes through a proxy of PROXY_LIST")
	return m, nil
}

func banCodes(codes []int) map[int]bool {
	m := map[int]bool{}
	for _, c := range codes {
		m[c] = true
	}
	return m
}

// Pool returns the middleware's proxy pool.
func (m *ProxyPool) Pool() *proxypool.Pool { return m.pool }

func (m *ProxyPool) scopes(px *proxypool.Proxy, req *spider.Request) throttling.Scopes {
	sc := throttling.Scopes{{Name: px.Scope()}}
	if m.perHost {
		sc = throttling.AddScope(sc, px.HostScope(req.Host()), 0)
	}
	return sc
}

// banned reports whether res is a refusal.
func (m *ProxyPool) banned(res *spider.Response) bool {
	return isBanned(res, m.banCodes, m.ban)
}

func isBanned(res *spider.Response, codes map[int]bool, ban BanChecker) bool {
	if res == nil {
		return false
	}
	return codes[res.Status] || (ban != nil && ban.IsBanned(res))
}

// WrapFetcher implements Downloader.
func (m *ProxyPool) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if p, ok := req.Get(MetaProxy).(string); (ok && p != "") || metaBool(req, MetaOffline) {
			// The spider's own proxy, or an answer from the HTTP cache.
			return next.Fetch(ctx, req)
		}
		px, scopes, sentAt, err := m.acquire(ctx, req)
		if err != nil || px == nil {
			return nil, err
		}
		req.Set(MetaProxyUsed, px.Label)
		send := withMeta(req, MetaProxy, px.URL.String())
		m.stats.Inc("proxy/requests", 1)
		m.stats.Inc("proxy/"+px.Label+"/requests", 1)
		res, err := next.Fetch(ctx, send)
		if res != nil && res.Request == send {
			res.Request = req
		}
		if m.thr != nil {
			if err != nil && intentional(err) {
				m.thr.Done(ctx, req, scopes, sentAt, nil, nil)
			} else {
				m.thr.Done(ctx, req, scopes, sentAt, res, err)
			}
		}
		switch {
		case err != nil && !intentional(err) && ctx.Err() == nil:
			rest := m.pool.Failed(px.Label, time.Now(), sentAt)
			m.stats.Inc("proxy/failures", 1)
			m.stats.Inc("proxy/"+px.Label+"/failures", 1)
			m.log.Warn().Str("proxy", px.Label).Dur("rest", rest).Str("request", RedactedRequest(req)).
				Str("error", redactProxyErr(err, px)).Msg("proxy failed; it rests")
			return m.retry(req, px, "proxy_failed", nil, err)
		case err == nil && m.banned(res):
			rest := m.pool.Failed(px.Label, time.Now(), sentAt)
			if m.thr != nil {
				m.thr.DelayScope(px.Scope(), rest)
			}
			m.stats.Inc("proxy/bans", 1)
			m.stats.Inc("proxy/"+px.Label+"/bans", 1)
			m.log.Info().Str("proxy", px.Label).Int("status", res.Status).Dur("rest", rest).
				Str("request", RedactedRequest(req)).Msg("proxy refused; it rests")
			return m.retry(req, px, ReasonProxyBanned, res, nil)
		case err == nil:
			m.pool.Succeeded(px.Label)
		}
		return res, err
	})
}

// acquire picks the request's proxy (its session's while it works, else
// the next one in turn that is not resting) and waits for the proxy's
// throttling scopes. A proxy that starts resting while the request waits
// for it is given up for another. When every proxy rests, the error is a
// *RescheduleError that puts the request back in the queue until the
// first rest ends.
func (m *ProxyPool) acquire(ctx context.Context, req *spider.Request) (*proxypool.Proxy, throttling.Scopes, time.Time, error) {
	sess := session.FromContext(ctx)
	for {
		now := time.Now()
		changed := m.pool.Changed()
		var px *proxypool.Proxy
		if sess != nil {
			if l := sess.Proxy(); l != "" && !m.pool.Resting(l, now) {
				px = m.pool.Get(l)
			}
		}
		if px == nil {
			var wait time.Duration
			px, wait = m.pool.Pick(now, metaStrings(req, MetaProxyTried), m.free(req, now))
			if px == nil {
				m.stats.Inc("proxy/all_resting", 1)
				nr := req.Clone()
				clearCopyMeta(nr)
				throttling.SetRequestDelay(nr, wait+10*time.Millisecond) // a new delay, applied once
				nr.DontFilter = true
				return nil, nil, time.Time{}, &RescheduleError{Requests: []*spider.Request{nr}, Reason: "proxy_pool_resting"}
			}
			if sess != nil {
				sess.SetProxy(px.Label)
			}
		}
		scopes := m.scopes(px, req)
		if m.thr == nil {
			return px, scopes, now, nil
		}
		actx, cancel := context.WithCancel(ctx)
		stop := make(chan struct{})
		go func(changed <-chan struct{}) {
			for {
				select {
				case <-changed:
					if m.pool.Resting(px.Label, time.Now()) {
						cancel()
						return
					}
					changed = m.pool.Changed()
				case <-stop:
					return
				}
			}
		}(changed)
		sentAt, err := m.thr.Admit(actx, scopes)
		close(stop)
		cancel()
		if err == nil {
			if !m.pool.Resting(px.Label, time.Now()) {
				return px, scopes, sentAt, nil
			}
			// Admitted just as it started resting: give the slot back.
			m.thr.NotSent(ctx, req, scopes, sentAt)
		} else if ctx.Err() != nil {
			return nil, nil, time.Time{}, err
		}
		m.stats.Inc("proxy/repicked", 1)
	}
}

// ReasonProxyBanned is the RescheduleError reason of a request retried on
// another proxy after a refusal (the Sessions middleware retires the
// session then).
const ReasonProxyBanned = "proxy_banned"

// free returns the pool's preference: proxies whose scopes have room now.
func (m *ProxyPool) free(req *spider.Request, now time.Time) func(*proxypool.Proxy) bool {
	if m.thr == nil {
		return nil
	}
	return func(px *proxypool.Proxy) bool { return m.thr.Wait(now, m.scopes(px, req)) == 0 }
}

// retry reschedules a copy of req for another proxy, or gives up after
// PROXY_RETRY_TIMES and passes the outcome on.
func (m *ProxyPool) retry(req *spider.Request, px *proxypool.Proxy, reason string, res *spider.Response, err error) (*spider.Response, error) {
	n, _ := metaInt(req, MetaProxyRetryTimes)
	if n >= m.retries {
		m.stats.Inc("proxy/retries_exhausted", 1)
		return res, err
	}
	nr := req.Clone()
	clearCopyMeta(nr)
	nr.Set(MetaProxyRetryTimes, n+1)
	tried := metaList(req, MetaProxyTried)
	nr.Set(MetaProxyTried, append(tried, px.Label))
	delete(nr.Meta, MetaProxyUsed)
	nr.DontFilter = true
	m.stats.Inc("proxy/retries", 1)
	return nil, &RescheduleError{Requests: []*spider.Request{nr}, Reason: reason}
}

// withMeta returns a shallow copy of req whose meta is a copy with key set
// to v: what the inner middlewares and the downloader see, while req
// itself never holds v.
func withMeta(req *spider.Request, key string, v any) *spider.Request {
	c := *req
	c.Meta = make(spider.Meta, len(req.Meta)+1)
	for k, x := range req.Meta {
		c.Meta[k] = x
	}
	c.Meta[key] = v
	return &c
}

func metaStrings(req *spider.Request, key string) []string {
	var out []string
	for _, v := range metaList(req, key) {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// redactProxyErr is err's message with the proxy's password hidden (the
// transport may quote the proxy URL).
func redactProxyErr(err error, px *proxypool.Proxy) string {
	msg := err.Error()
	if px.URL.User != nil {
		if pass, ok := px.URL.User.Password(); ok && pass != "" {
			msg = strings.ReplaceAll(msg, pass, redact.Mask)
		}
	}
	return msg
}
