package httpcache

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Policy decides what the cache stores and when a stored response may be
// used.
type Policy interface {
	// ShouldCacheRequest reports whether req may be answered from and
	// stored in the cache at all.
	ShouldCacheRequest(req *spider.Request) bool
	// ShouldCacheResponse reports whether res, the answer to req, may be
	// stored.
	ShouldCacheResponse(res *spider.Response, req *spider.Request) bool
	// IsFresh reports whether m may answer req at now without asking the
	// server.
	IsFresh(m *Meta, req *spider.Request, now time.Time) bool
	// Conditional adds validators from m (If-None-Match,
	// If-Modified-Since) to h, the headers of a request that revalidates a
	// stale entry.
	Conditional(m *Meta, h http.Header)
	// IsValid reports whether the stale m may still answer req, given the
	// server's answer res to the revalidation request (a 304, or a 5xx when
	// the entry does not require revalidation).
	IsValid(m *Meta, res *spider.Response, req *spider.Request) bool
}

// DummyPolicy stores every response and answers every request it has a
// response for, never asking the server again: for replaying a crawl and
// for developing a spider offline.
type DummyPolicy struct{}

// ShouldCacheRequest implements Policy.
func (DummyPolicy) ShouldCacheRequest(*spider.Request) bool { return true }

// ShouldCacheResponse implements Policy.
func (DummyPolicy) ShouldCacheResponse(*spider.Response, *spider.Request) bool { return true }

// IsFresh implements Policy.
func (DummyPolicy) IsFresh(*Meta, *spider.Request, time.Time) bool { return true }

// Conditional implements Policy.
func (DummyPolicy) Conditional(*Meta, http.Header) {}

// IsValid implements Policy.
func (DummyPolicy) IsValid(*Meta, *spider.Response, *spider.Request) bool { return true }

// RFC9111Policy follows the HTTP caching rules of RFC 9111 for a private
// cache: no-store is honoured both ways; freshness comes from max-age,
// then Expires, then 10% of the time since Last-Modified, and permanent
// redirects (300, 301, 308) are fresh for a year; the request's max-age,
// max-stale and no-cache are honoured; stale entries are revalidated with
// If-None-Match / If-Modified-Since, and a 304 makes them fresh again; a
// 5xx during revalidation serves the stale entry unless it says
// must-revalidate. Vary is not taken into account (as in Scrapy).
type RFC9111Policy struct {
	// AlwaysStore stores responses without caching headers too (they are
	// revalidated before use).
	AlwaysStore bool
	// IgnoreResponseCacheControls lists Cache-Control directives of
	// responses to ignore ("no-store", "no-cache", ...).
	IgnoreResponseCacheControls []string
}

// maxAge is the freshness of permanent redirects without caching headers.
const maxAge = 365 * 24 * time.Hour

// ShouldCacheRequest implements Policy.
func (p RFC9111Policy) ShouldCacheRequest(req *spider.Request) bool {
	_, noStore := cacheControl(req.Header)["no-store"]
	return !noStore
}

// ShouldCacheResponse implements Policy.
func (p RFC9111Policy) ShouldCacheResponse(res *spider.Response, req *spider.Request) bool {
	cc := p.responseCC(res.Header)
	if _, ok := cc["no-store"]; ok {
		return false
	}
	if res.Status == http.StatusNotModified {
		return false
	}
	if p.AlwaysStore {
		return true
	}
	if _, ok := cc["max-age"]; ok {
		return true
	}
	if res.Header.Get("Expires") != "" {
		return true
	}
	switch res.Status {
	case 300, 301, 308:
		return true
	case 200, 203, 401:
		return res.Header.Get("Last-Modified") != "" || res.Header.Get("ETag") != ""
	}
	return false
}

// IsFresh implements Policy.
func (p RFC9111Policy) IsFresh(m *Meta, req *spider.Request, now time.Time) bool {
	cc := p.responseCC(m.Header)
	ccReq := cacheControl(req.Header)
	if _, ok := cc["no-cache"]; ok {
		return false
	}
	if _, ok := ccReq["no-cache"]; ok {
		return false
	}
	lifetime := p.freshnessLifetime(m, cc)
	age := currentAge(m, now)
	if d, ok := seconds(ccReq, "max-age"); ok {
		lifetime = min(lifetime, d)
	}
	if d, ok := seconds(ccReq, "min-fresh"); ok {
		age = addSat(age, d)
	}
	if age < lifetime {
		return true
	}
	if v, ok := ccReq["max-stale"]; ok {
		if _, must := cc["must-revalidate"]; !must {
			if v == "" {
				return true
			}
			if d, ok := seconds(ccReq, "max-stale"); ok && age < addSat(lifetime, d) {
				return true
			}
		}
	}
	return false
}

// Conditional implements Policy.
func (p RFC9111Policy) Conditional(m *Meta, h http.Header) {
	if v := m.Header.Get("Last-Modified"); v != "" {
		h.Set("If-Modified-Since", v)
	}
	if v := m.Header.Get("ETag"); v != "" {
		h.Set("If-None-Match", v)
	}
}

// IsValid implements Policy.
func (p RFC9111Policy) IsValid(m *Meta, res *spider.Response, req *spider.Request) bool {
	if res.Status == http.StatusNotModified {
		return true
	}
	if res.Status >= 500 {
		_, must := p.responseCC(m.Header)["must-revalidate"]
		return !must
	}
	return false
}

func (p RFC9111Policy) responseCC(h http.Header) map[string]string {
	cc := cacheControl(h)
	for _, d := range p.IgnoreResponseCacheControls {
		delete(cc, strings.ToLower(d))
	}
	return cc
}

func (p RFC9111Policy) freshnessLifetime(m *Meta, cc map[string]string) time.Duration {
	if d, ok := seconds(cc, "max-age"); ok {
		return d
	}
	date := responseDate(m)
	if v := m.Header.Get("Expires"); v != "" {
		t, err := http.ParseTime(v)
		if err != nil {
			return 0 // invalid Expires means already expired
		}
		return max(t.Sub(date), 0)
	}
	if v := m.Header.Get("Last-Modified"); v != "" {
		if t, err := http.ParseTime(v); err == nil && !t.After(date) {
			return date.Sub(t) / 10
		}
	}
	switch m.Status {
	case 300, 301, 308:
		return maxAge
	}
	return 0
}

func responseDate(m *Meta) time.Time {
	if t, err := http.ParseTime(m.Header.Get("Date")); err == nil {
		return t
	}
	return m.Stored
}

// currentAge follows RFC 9111 §4.2.3, with the time the entry was stored
// as the response time.
func currentAge(m *Meta, now time.Time) time.Duration {
	apparent := max(m.Stored.Sub(responseDate(m)), 0)
	initial := apparent
	if v, err := strconv.Atoi(strings.TrimSpace(m.Header.Get("Age"))); err == nil && v > 0 {
		initial = max(initial, settings.Duration(float64(v)))
	}
	return addSat(initial, max(now.Sub(m.Stored), 0))
}

// addSat adds two non-negative durations, saturating at the largest
// Duration instead of wrapping around to a negative age: a Date header of
// year 1 or an Age of 10^19 seconds makes an entry as old as can be, never
// fresh again.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// cacheControl parses Cache-Control directives: name -> value ("" when
// the directive has none), names lower-cased.
func cacheControl(h http.Header) map[string]string {
	out := map[string]string{}
	for _, line := range h.Values("Cache-Control") {
		for _, part := range strings.Split(line, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			k, v, _ := strings.Cut(part, "=")
			out[strings.ToLower(strings.TrimSpace(k))] = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return out
}

func seconds(cc map[string]string, name string) (time.Duration, bool) {
	v, ok := cc[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return settings.Duration(float64(n)), true
}
