package render

import (
	"net/url"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// resourceTypes are the DevTools resource types RENDER_BLOCK_RESOURCE_TYPES
// may name.
var resourceTypes = []string{"Document", "Stylesheet", "Image", "Media", "Font", "Script", "TextTrack",
	"XHR", "Fetch", "Prefetch", "EventSource", "WebSocket", "Manifest", "SignedExchange", "Ping",
	"CSPViolationReport", "Preflight", "FedCM", "Other"}

func knownType(t string) bool { return slices.Contains(resourceTypes, t) }

// sameURL reports whether a and b name the same document: fragments
// ignored, an empty path and "/" alike (the browser normalises them).
func sameURL(a, b *url.URL) bool {
	norm := func(u *url.URL) string {
		c := *u
		c.Fragment, c.RawFragment = "", ""
		if c.Path == "" {
			c.Path = "/"
		}
		c.Host = strings.ToLower(spider.HostKey(u))
		c.Scheme = strings.ToLower(c.Scheme)
		return c.String()
	}
	return norm(a) == norm(b)
}

// paused decides about one request the page makes, paused by the Fetch
// domain before it leaves the browser. The policy:
//
//   - the page's own document (the first document request of the main
//     frame) was admitted by the scheduler: it goes on at once;
//   - requests made between renders (no page) are failed;
//   - non-HTTP(S) requests (data:, blob:) never reach the network: they go on;
//   - with the SSRF guard (SSRF_PROTECTION_ENABLED), requests to internal
//     addresses are failed; a redirect of the page's own document to one
//     makes the render a blocked_address drop, as for plain HTTP;
//   - RENDER_BLOCK_RESOURCE_TYPES (images, fonts, media by default) are
//     failed as blocked by the client;
//   - with RENDER_THIRD_PARTY: block (or the render_third_party meta),
//     requests to other hosts than the page's are failed;
//   - every other request (subresources, iframes, XHR, redirects followed
//     by the browser) waits for throttling admission of its own scopes,
//     exactly like a request of the crawl (the page's host scope for its
//     own host, each other host its own scopes; a redirect of the page's
//     own document keeps the page's throttling_scopes meta, which is then
//     its whole set of scopes), and holds its slots until it finished
//     loading.
func (t *tab) paused(pr *pageRun, ev *fetch.EventRequestPaused) {
	st := t.r.stats
	if pr == nil {
		t.fail(ev.RequestID, network.ErrorReasonAborted)
		return
	}
	u, host := hostOf(ev.Request.URL)
	if u == nil {
		_ = t.resume(ev.RequestID)
		return
	}
	netID := ev.NetworkID
	if netID == "" {
		netID = network.RequestID(ev.RequestID)
	}
	if ev.ResourceType == network.ResourceTypeDocument && ev.FrameID == t.frame && ev.RedirectedRequestID == "" &&
		sameURL(u, pr.req.URL) {
		pr.mu.Lock()
		first := !pr.claimed
		pr.claimed = true
		if first {
			pr.inflight[netID] = &admission{req: pr.req, page: true}
		}
		pr.mu.Unlock()
		if first {
			_ = t.resume(ev.RequestID)
			return
		}
	}
	docHop := false // a redirect hop of the page's own document
	if ev.RedirectedRequestID != "" {
		// The previous hop of this request got a redirect: its slots are
		// free, and the next hop is admitted like a new request.
		pr.mu.Lock()
		prev := pr.inflight[netID]
		docHop = prev != nil && (prev.page || prev.doc)
		delete(pr.inflight, netID)
		pr.mu.Unlock()
		if prev != nil {
			if prev.page && pr.report != nil {
				pr.report(nil, nil)
			} else if !prev.page {
				pr.release(prev, true)
			}
		}
		st.Inc("render/redirects", 1)
	}
	if err := t.r.opts.Guard.CheckName(pr.ctx, u.Hostname(), nil); err != nil {
		// SSRF_PROTECTION_ENABLED: an internal address, whatever asked for
		// it (a redirect of the page, a script, an iframe).
		st.Inc("render/blocked_address", 1)
		if ev.ResourceType == network.ResourceTypeDocument && ev.FrameID == t.frame {
			pr.mu.Lock()
			if pr.blocked == nil {
				pr.blocked = err
			}
			pr.mu.Unlock()
		}
		t.fail(ev.RequestID, network.ErrorReasonBlockedByClient)
		return
	}
	if slices.Contains(t.r.opts.BlockTypes, string(ev.ResourceType)) {
		st.Inc("render/subresources/blocked/"+string(ev.ResourceType), 1)
		t.fail(ev.RequestID, network.ErrorReasonBlockedByClient)
		return
	}
	third := host != pr.host
	if third && pr.block3rd {
		st.Inc("render/subresources/blocked/third_party", 1)
		t.fail(ev.RequestID, network.ErrorReasonBlockedByClient)
		return
	}
	sreq := &spider.Request{URL: u, Method: ev.Request.Method}
	if docHop {
		// The page's redirects keep its throttling_scopes, as a redirect
		// of the crawl does (the meta, when set, is the whole set of
		// scopes); subresources have their own host's scopes.
		if v := pr.req.Get(throttling.MetaScopes); v != nil {
			sreq.Set(throttling.MetaScopes, v)
		}
	}
	a := &admission{req: sreq, doc: docHop}
	if thr := t.r.opts.Throttler; thr != nil {
		scopes, err := thr.Scopes(pr.ctx, sreq)
		if err != nil {
			t.fail(ev.RequestID, network.ErrorReasonFailed)
			return
		}
		sentAt, err := thr.Admit(pr.ctx, scopes)
		if err != nil {
			// The render ended (timeout, done) while it waited.
			st.Inc("render/subresources/abandoned", 1)
			t.fail(ev.RequestID, network.ErrorReasonAborted)
			return
		}
		a.scopes, a.sentAt = scopes, sentAt
	}
	pr.mu.Lock()
	if pr.ctx.Err() != nil {
		pr.mu.Unlock()
		pr.release(a, true)
		t.fail(ev.RequestID, network.ErrorReasonAborted)
		return
	}
	pr.inflight[netID] = a
	pr.mu.Unlock()
	st.Inc("render/subresources/admitted", 1)
	if third {
		st.Inc("render/subresources/third_party", 1)
	} else {
		st.Inc("render/subresources/same_host", 1)
	}
	if err := t.resume(ev.RequestID); err != nil {
		pr.finished(netID, true)
	}
}
