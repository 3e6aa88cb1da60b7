package middleware

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/gocrawl/gocrawl/spider"
)

// Request meta keys read or written by the built-in middlewares. Meta
// values are JSON-friendly (numbers may come back as float64 after a
// persistent queue), and the middlewares read them leniently.
const (
	// MetaDontRetry (bool) keeps the Retry middleware away from a request.
	MetaDontRetry = "dont_retry"
	// MetaMaxRetryTimes (int) overrides RETRY_TIMES for a request.
	MetaMaxRetryTimes = "max_retry_times"
	// The retries made so far are counted in spider.MetaRetryTimes
	// ("retry_times", an int), set by Retry.

	// MetaRetryRefusals (int) counts the times a host refused the request
	// by rate limit (429 or 503 with Retry-After); set by Retry, capped by
	// RETRY_REFUSED_TIMES.
	MetaRetryRefusals = "retry_refusals"

	// MetaDontRedirect (bool) passes 3xx responses and refreshes through.
	MetaDontRedirect = "dont_redirect"
	// MetaRedirectTimes (int) counts the redirects followed so far.
	MetaRedirectTimes = "redirect_times"
	// MetaRedirectTTL (int) is how many more redirects may be followed.
	MetaRedirectTTL = "redirect_ttl"
	// MetaRedirectURLs ([]any of strings) lists the URLs redirected from,
	// oldest first.
	MetaRedirectURLs = "redirect_urls"
	// MetaRedirectReasons ([]any) lists why each redirect happened: the
	// status code, or "meta refresh".
	MetaRedirectReasons = "redirect_reasons"

	// MetaHandleHTTPStatusList ([]any of ints) lets these statuses reach
	// the callback (HttpError) and keeps Redirect from following them.
	MetaHandleHTTPStatusList = "handle_httpstatus_list"
	// MetaHandleHTTPStatusAll (bool) does the same for every status.
	MetaHandleHTTPStatusAll = "handle_httpstatus_all"

	// MetaCookieJar (string or number) selects a separate cookie session.
	MetaCookieJar = "cookiejar"
	// MetaDontMergeCookies (bool) sends no cookies from the jar and stores
	// none from the response.
	MetaDontMergeCookies = "dont_merge_cookies"
	// MetaCookies (map of name -> value) adds cookies to the request's jar
	// for its URL before it is sent, like Scrapy's Request(cookies=...).
	MetaCookies = "cookies"

	// MetaHTTPUser and MetaHTTPPass (strings) give Basic credentials for
	// this request only; they are dropped when a redirect changes host.
	MetaHTTPUser = "http_user"
	MetaHTTPPass = "http_pass"

	// MetaProxy is the proxy URL for the request (read by the downloader).
	MetaProxy = "proxy"
	// metaSchemeProxy marks a proxy that HttpProxy chose from the
	// environment for the request's scheme, so Redirect re-derives it when
	// the scheme changes.
	metaSchemeProxy = "_scheme_proxy"

	// MetaDontCache (bool) keeps a request away from the HTTP cache.
	MetaDontCache = "dont_cache"

	// MetaAllowOffsite (bool) exempts a request from the Offsite filter.
	MetaAllowOffsite = "allow_offsite"

	// MetaReferrerPolicy (string) overrides REFERRER_POLICY for the
	// requests a response's callback produces.
	MetaReferrerPolicy = "referrer_policy"
)

// HTTPStatusLister is implemented by spiders whose callbacks handle some
// non-2xx statuses themselves (Scrapy's handle_httpstatus_list attribute):
// HttpError lets them through and Redirect does not follow them.
type HTTPStatusLister interface {
	HandleHTTPStatusList() []int
}

func metaBool(req *spider.Request, key string) bool {
	switch v := req.Get(key).(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	}
	return false
}

// metaInt reads an integer meta value.
func metaInt(req *spider.Request, key string) (int, bool) {
	return toInt(req.Get(key))
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case int32:
		return int(n), true
	case float64:
		if n == math.Trunc(n) {
			return int(n), true
		}
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	case string:
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

func metaInts(req *spider.Request, key string) []int {
	var out []int
	switch v := req.Get(key).(type) {
	case []int:
		return v
	case []any:
		for _, x := range v {
			if n, ok := toInt(x); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

func metaList(req *spider.Request, key string) []any {
	switch v := req.Get(key).(type) {
	case []any:
		return v
	case []string:
		out := make([]any, len(v))
		for i, s := range v {
			out[i] = s
		}
		return out
	}
	return nil
}

// handlesStatus reports whether req or the spider asked for status to reach
// the callback.
func handlesStatus(sp spider.Spider, req *spider.Request, status int) bool {
	if metaBool(req, MetaHandleHTTPStatusAll) {
		return true
	}
	for _, s := range metaInts(req, MetaHandleHTTPStatusList) {
		if s == status {
			return true
		}
	}
	if l, ok := sp.(HTTPStatusLister); ok {
		for _, s := range l.HandleHTTPStatusList() {
			if s == status {
				return true
			}
		}
	}
	return false
}
