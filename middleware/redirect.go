package middleware

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/downloader/netguard"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

func init() { RegisterDownloader("Redirect", newRedirect) }

// Redirect follows 301, 302, 303, 307 and 308 responses that carry a
// Location header. The downloader never follows redirects itself: Redirect
// answers with a *RescheduleError carrying the new request, which the
// engine enqueues, so each hop goes through the scheduler, the throttling
// gate and the whole downloader chain again (Offsite and robots.txt check
// the new URL like any other).
//
// Method and body follow the Fetch standard (what browsers do): 303
// becomes GET (HEAD stays HEAD); 301 and 302 turn POST into GET; 307 and
// 308 keep the method and body. A GET switch drops the body and its
// Content-* headers. Cookie and Authorization headers and http_user/
// http_pass meta are dropped when the host changes (Authorization also when
// the scheme changes); the Cookies and HttpAuth middlewares add what
// belongs to the new URL. The Referer is recomputed for the new URL.
//
// The new request keeps the callback, errback, meta (custom
// throttling_scopes included, as the throttling spec requires), depth and
// DontFilter of the original; its priority is raised by
// REDIRECT_PRIORITY_ADJUST. Meta redirect_times, redirect_ttl,
// redirect_urls (the URLs redirected from) and redirect_reasons (status
// codes, or "meta refresh") record the chain.
//
// Not followed (the response goes on to HttpError and the callback):
// requests with dont_redirect meta; statuses listed in the
// handle_httpstatus_list meta or the spider's HandleHTTPStatusList, or
// with handle_httpstatus_all. Dropped with a reason (counted as
// engine/dropped/<reason>, passed to the errback): more than
// REDIRECT_MAX_TIMES hops (redirect_max_times), a URL visited a third time
// in one chain (redirect_loop), a Location that is not a valid http(s) URL
// (redirect_bad_location, redirect_unsupported_scheme), and with
// SSRF_PROTECTION_ENABLED a Location whose host is an internal address
// literal or a localhost name (blocked_address; names that resolve to
// internal addresses are refused when the downloader connects).
//
// A 3xx Retry-After is honoured up to REDIRECT_MAX_DELAY seconds by giving
// the new request a throttling_delay.
type Redirect struct {
	*redirector
}

// redirector builds redirect requests; Redirect and MetaRefresh share it.
type redirector struct {
	maxTimes       int
	priorityAdjust int
	maxDelay       time.Duration
	sp             spider.Spider
	stats          *stats.Collector
	log            zerolog.Logger
	referer        *refererPolicy  // nil when REFERER_ENABLED is false
	guard          *netguard.Guard // SSRF_PROTECTION_ENABLED, or nil
}

func newRedirector(c *spider.Crawler) (*redirector, error) {
	s := c.Settings
	r := &redirector{
		maxTimes:       s.Int("REDIRECT_MAX_TIMES"),
		priorityAdjust: s.Int("REDIRECT_PRIORITY_ADJUST"),
		maxDelay:       s.Seconds("REDIRECT_MAX_DELAY"),
		sp:             c.Spider,
		stats:          c.Stats,
		log:            c.Log,
	}
	g, err := netguard.FromSettings(s)
	if err != nil {
		return nil, err
	}
	r.guard = g
	if s.Bool("REFERER_ENABLED") {
		p, err := parseReferrerPolicy(s.String("REFERRER_POLICY"))
		if err != nil {
			return nil, fmt.Errorf("REFERRER_POLICY: %w", err)
		}
		r.referer = &p
	}
	return r, nil
}

func newRedirect(c *spider.Crawler) (Downloader, error) {
	if !c.Settings.Bool("REDIRECT_ENABLED") {
		return nil, nil
	}
	r, err := newRedirector(c)
	if err != nil {
		return nil, err
	}
	return &Redirect{r}, nil
}

// WrapFetcher implements Downloader.
func (r *Redirect) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		res, err := next.Fetch(ctx, req)
		if err != nil {
			return res, err
		}
		switch res.Status {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
			http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return res, nil
		}
		loc := res.Header.Get("Location")
		if loc == "" || metaBool(req, MetaDontRedirect) || handlesStatus(r.sp, req, res.Status) {
			return res, nil
		}
		method := req.EffectiveMethod()
		toGet := (res.Status == http.StatusSeeOther && method != http.MethodGet && method != http.MethodHead) ||
			((res.Status == http.StatusMovedPermanently || res.Status == http.StatusFound) && method == http.MethodPost)
		var delay time.Duration
		if d, ok := parseRetryAfter(res.Header.Get("Retry-After"), res.Header.Get("Date"), time.Now()); ok {
			delay = d
		}
		nr, err := r.follow(req, loc, res.Status, toGet, delay)
		if err != nil {
			return nil, err
		}
		return nil, &RescheduleError{Requests: []*spider.Request{nr}, Reason: "redirect"}
	})
}

// follow returns the request that follows req to loc (resolved against
// req's URL), or a *DropError.
func (r *redirector) follow(req *spider.Request, loc string, reason any, toGet bool, delay time.Duration) (*spider.Request, error) {
	target, err := req.URL.Parse(strings.TrimSpace(loc))
	if err != nil {
		r.log.Info().Str("request", RedactedRequest(req)).Str("location", loc).Err(err).Msg("redirect to an invalid URL dropped")
		return nil, &DropError{Reason: "redirect_bad_location", Err: fmt.Errorf("location %q: %v", loc, err)}
	}
	if target.Scheme != "http" && target.Scheme != "https" {
		r.log.Info().Str("request", RedactedRequest(req)).Str("location", RedactedURL(target)).
			Msg("redirect to a non-http(s) URL dropped")
		return nil, &DropError{Reason: "redirect_unsupported_scheme", Err: fmt.Errorf("location %s: scheme %q is not http or https", RedactedURL(target), target.Scheme)}
	}
	if target.Host == "" {
		return nil, &DropError{Reason: "redirect_bad_location", Err: fmt.Errorf("location %q has no host", loc)}
	}
	if err := r.guard.CheckHost(target.Hostname()); err != nil {
		r.log.Warn().Str("request", RedactedRequest(req)).Str("location", RedactedURL(target)).Err(err).
			Msg("redirect to an internal address refused by the SSRF protection")
		return nil, &DropError{Reason: netguard.DropReason, Err: err}
	}
	target.Fragment, target.RawFragment = "", ""

	ttl, ok := metaInt(req, MetaRedirectTTL)
	if !ok {
		ttl = r.maxTimes
	}
	times, _ := metaInt(req, MetaRedirectTimes)
	times++
	if ttl <= 0 || times > r.maxTimes {
		r.log.Debug().Str("request", RedactedRequest(req)).Int("max", r.maxTimes).Msg("redirect dropped: REDIRECT_MAX_TIMES reached")
		return nil, &DropError{Reason: "redirect_max_times", Err: fmt.Errorf("more than %d redirects (REDIRECT_MAX_TIMES)", r.maxTimes)}
	}
	urls := append(metaList(req, MetaRedirectURLs), req.URL.String())
	visits := 0
	for _, u := range urls {
		if s, _ := u.(string); s == target.String() {
			visits++
		}
	}
	if visits >= 2 {
		r.log.Debug().Str("request", RedactedRequest(req)).Str("location", RedactedURL(target)).Msg("redirect loop dropped")
		return nil, &DropError{Reason: "redirect_loop", Err: fmt.Errorf("%s was already visited %d times in this redirect chain", RedactedURL(target), visits)}
	}

	nr := req.Clone()
	nr.URL = target
	nr.Priority = req.Priority + r.priorityAdjust
	nr.Set(MetaRedirectTimes, times)
	nr.Set(MetaRedirectTTL, ttl-1)
	nr.Set(MetaRedirectURLs, urls)
	nr.Set(MetaRedirectReasons, append(metaList(req, MetaRedirectReasons), reason))
	clearCopyMeta(nr)
	if delay > 0 {
		throttling.SetRequestDelay(nr, min(delay, r.maxDelay)) // a new delay, applied once
	}
	if toGet {
		if nr.Method != http.MethodHead {
			nr.Method = http.MethodGet
		}
		nr.Body = nil
		for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Content-Language", "Content-Location"} {
			nr.Header.Del(h)
		}
	}
	sameHost := spider.HostKey(req.URL) == spider.HostKey(target)
	sameScheme := req.URL.Scheme == target.Scheme
	if !sameHost {
		nr.Header.Del("Cookie")
		delete(nr.Meta, MetaHTTPUser)
		delete(nr.Meta, MetaHTTPPass)
	}
	if !sameHost || !sameScheme {
		nr.Header.Del("Authorization")
	}
	if !sameScheme && metaBool(nr, metaSchemeProxy) {
		// HttpProxy picked the proxy for the old scheme: let it pick again.
		delete(nr.Meta, MetaProxy)
		delete(nr.Meta, metaSchemeProxy)
		nr.Header.Del("Proxy-Authorization")
	}
	if ref := nr.RefererHeader(); ref != "" && r.referer != nil {
		if from, err := url.Parse(ref); err == nil {
			policy := *r.referer
			if p, err := parseReferrerPolicy(stringMeta(nr, MetaReferrerPolicy)); err == nil && p != "" {
				policy = p
			}
			v := policy.referrer(newPageReferrer(from), target)
			switch {
			case nr.Header.Get("Referer") == "":
				nr.Referer = v
			case v != "":
				nr.Header.Set("Referer", v)
			default:
				nr.Header.Del("Referer")
			}
		}
	}
	if r.stats != nil {
		r.stats.Inc(fmt.Sprintf("redirect/count/%v", reason), 1)
	}
	r.log.Debug().Str("request", RedactedRequest(req)).Str("location", RedactedURL(target)).
		Str("reason", fmt.Sprint(reason)).Msg("redirecting")
	return nr, nil
}

// clearCopyMeta removes meta that must not carry over to a new request made
// from an old one: an offline promise (the copy is asked again). The
// one-time throttling_delay stays applied: the throttler marks it in meta.
func clearCopyMeta(r *spider.Request) {
	if v, _ := r.Get(MetaOffline).(bool); v {
		delete(r.Meta, MetaOffline)
	}
}

func stringMeta(r *spider.Request, key string) string {
	s, _ := r.Get(key).(string)
	return s
}

// parseRetryAfter reads a Retry-After value: seconds, or an HTTP date
// (relative to the response's Date header when present, else now).
func parseRetryAfter(v, date string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return settings.Duration(n), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d, err := http.ParseTime(date); err == nil {
		now = d
	}
	return max(t.Sub(now), 0), true
}
