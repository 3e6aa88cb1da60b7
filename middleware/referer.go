package middleware

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterSpider("Referer", newReferer) }

// Referer sets the Referer header of the requests a callback produces to
// the URL of the page they were found on, as much of it as the referrer
// policy allows (W3C Referrer Policy). The policy is, first found: the new
// request's referrer_policy meta, the page's Referrer-Policy header,
// REFERRER_POLICY. Requests that already have a Referer keep it. Redirect
// recomputes the header for the redirect target. Disabled by
// REFERER_ENABLED: false.
//
// Policies: no-referrer, no-referrer-when-downgrade (the default; Scrapy's
// "scrapy-default" is accepted as an alias), same-origin, origin,
// strict-origin, origin-when-cross-origin, strict-origin-when-cross-origin,
// unsafe-url. The referrer never includes credentials or a fragment.
type Referer struct {
	policy refererPolicy
}

func newReferer(c *spider.Crawler) (Spider, error) {
	if !c.Settings.Bool("REFERER_ENABLED") {
		return nil, nil
	}
	p, err := parseReferrerPolicy(c.Settings.String("REFERRER_POLICY"))
	if err != nil {
		return nil, fmt.Errorf("REFERRER_POLICY: %w", err)
	}
	if p == "" {
		return nil, fmt.Errorf("REFERRER_POLICY: empty; use one of %s", strings.Join(referrerPolicies, ", "))
	}
	return &Referer{policy: p}, nil
}

// WrapHandler implements Spider.
func (m *Referer) WrapHandler(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		pagePolicy := m.policy
		if p, ok := policyFromHeader(res.Header); ok {
			pagePolicy = p
		}
		page := newPageReferrer(res.URL)
		return next.Handle(ctx, res, hook(out, refererHook{policy: pagePolicy, page: page}))
	})
}

// refererHook sets the Referer of the requests found on page, by policy
// unless a request's meta names its own.
type refererHook struct {
	policy refererPolicy
	page   *pageReferrer
}

func (h refererHook) onRequest(r *spider.Request) *spider.Request {
	if r.RefererHeader() != "" {
		return r
	}
	policy := h.policy
	if r.Meta != nil {
		if p, err := parseReferrerPolicy(stringMeta(r, MetaReferrerPolicy)); err == nil && p != "" {
			policy = p
		}
	}
	// The field, not a header map: every link of the page shares page's
	// strings, and the downloader sends it as the header.
	r.Referer = policy.referrer(h.page, r.URL)
	return r
}

// pageReferrer is the page a request was found on, with the two referrer
// values a policy can give for it (the URL without credentials and
// fragment, and its origin), computed for the page's first request and
// shared by all the others: most pages of a large crawl link to nothing
// new, and pay nothing.
type pageReferrer struct {
	url          *url.URL
	once         sync.Once
	full, origin string
}

func newPageReferrer(u *url.URL) *pageReferrer { return &pageReferrer{url: u} }

// values returns the page's two referrer values ("" for a page that is not
// http or https).
func (p *pageReferrer) values() (full, origin string) {
	p.once.Do(func() {
		if u := p.url; u != nil && (u.Scheme == "http" || u.Scheme == "https") {
			p.full, p.origin = stripURL(u), u.Scheme+"://"+u.Host+"/"
		}
	})
	return p.full, p.origin
}

// refererPolicy is a W3C referrer policy name.
type refererPolicy string

var referrerPolicies = []string{
	"no-referrer", "no-referrer-when-downgrade", "same-origin", "origin", "strict-origin",
	"origin-when-cross-origin", "strict-origin-when-cross-origin", "unsafe-url",
}

// parseReferrerPolicy checks a policy name; "" gives "" and no error.
func parseReferrerPolicy(s string) (refererPolicy, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "":
		return "", nil
	case "scrapy-default", "default":
		return "no-referrer-when-downgrade", nil
	}
	for _, p := range referrerPolicies {
		if s == p {
			return refererPolicy(s), nil
		}
	}
	return "", fmt.Errorf("unknown referrer policy %q (want one of %s)", s, strings.Join(referrerPolicies, ", "))
}

// policyFromHeader reads a Referrer-Policy header: the last policy it
// names that is known wins, as browsers do.
func policyFromHeader(h http.Header) (refererPolicy, bool) {
	var found refererPolicy
	for _, v := range h["Referrer-Policy"] { // canonical: Values without canonicalizing
		for _, tok := range strings.Split(v, ",") {
			if p, err := parseReferrerPolicy(tok); err == nil && p != "" {
				found = p
			}
		}
	}
	return found, found != ""
}

// referrer returns the Referer value for a request to `to` made from
// page, or "" for none.
func (p refererPolicy) referrer(page *pageReferrer, to *url.URL) string {
	from := page.url
	if from == nil || to == nil || (from.Scheme != "http" && from.Scheme != "https") {
		return ""
	}
	sameOrigin := from.Scheme == to.Scheme && strings.EqualFold(spider.HostKey(from), spider.HostKey(to))
	downgrade := from.Scheme == "https" && to.Scheme != "https"
	full, origin := page.values()
	switch p {
	case "no-referrer":
		return ""
	case "no-referrer-when-downgrade":
		if downgrade {
			return ""
		}
		return full
	case "same-origin":
		if sameOrigin {
			return full
		}
		return ""
	case "origin":
		return origin
	case "strict-origin":
		if downgrade {
			return ""
		}
		return origin
	case "origin-when-cross-origin":
		if sameOrigin {
			return full
		}
		return origin
	case "strict-origin-when-cross-origin":
		if sameOrigin {
			return full
		}
		if downgrade {
			return ""
		}
		return origin
	case "unsafe-url":
		return full
	}
	return ""
}

// stripURL removes credentials and fragment.
func stripURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}
