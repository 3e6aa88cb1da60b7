// Package follow is a generic crawler that needs no Go code: it starts at
// some URLs, follows the links a CSS selector finds while they stay inside
// the allowed domains and a maximum depth, and emits one Page item per
// response.
//
//	gocrawl run follow -a start_urls=https://example.com/ -a max_depth=2 -O pages.jsonl
//
// Arguments (-a NAME=VALUE):
//
//   - start_urls: comma-separated absolute http(s) URLs (required);
//   - allowed_domains: comma-separated domains the crawl may visit,
//     subdomains included (default: the hosts of the start URLs);
//   - follow: CSS selector of the links to follow (default "a[href]");
//   - max_depth: links followed from a start URL at most (default 0 =
//     unlimited; 1 = the start pages and the pages they link to);
//   - render: true renders every page in headless Chromium before its
//     links are followed (sets RENDER_JS; see docs/rendering.md), for
//     sites whose links are built by JavaScript;
//   - wait_selector: with render, a CSS selector that must appear before
//     a page is taken (RENDER_WAIT_SELECTOR);
//   - scroll: with render, scroll to the bottom this many times first
//     (infinite scroll; the render_scroll meta).
//
// The allowed domains are enforced by the spider itself, so the crawl stays
// inside them with or without an offsite middleware.
package follow

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/andybalholm/cascadia"

	"github.com/gocrawl/gocrawl/spider"
)

// Page is the item emitted for every response.
type Page struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Title  string `json:"title"`
	Depth  int    `json:"depth"`
}

// DefaultFollow is the default link selector.
const DefaultFollow = "a[href]"

// Spider is the follow spider. Create it with New and configure it with
// SetArgs (or set the fields directly and call SetArgs(nil) to check them).
type Spider struct {
	// StartURLs are crawled first.
	StartURLs []string
	// Domains the crawl may visit (subdomains included); empty means the
	// hosts of StartURLs.
	Domains []string
	// Follow is the CSS selector of the links to follow.
	Follow string
	// MaxDepth limits how many links deep the crawl goes (0 = no limit).
	MaxDepth int
	// Render renders every page in headless Chromium (RENDER_JS).
	Render bool
	// WaitSelector is RENDER_WAIT_SELECTOR when Render is set.
	WaitSelector string
	// Scroll is the render_scroll meta of every request when Render is set.
	Scroll int

	sel cascadia.Matcher
}

// New returns a follow spider with the default selector.
func New() *Spider { return &Spider{Follow: DefaultFollow} }

// Name returns "follow".
func (*Spider) Name() string { return "follow" }

var argNames = []string{"allowed_domains", "follow", "max_depth", "render", "scroll", "start_urls", "wait_selector"}

// SetArgs reads the spider arguments and checks them; every problem is
// reported, each saying what to pass instead.
func (s *Spider) SetArgs(args map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(args)) {
		v := args[k]
		switch k {
		case "start_urls":
			s.StartURLs = splitList(v)
		case "allowed_domains":
			s.Domains = splitList(v)
		case "follow":
			s.Follow = strings.TrimSpace(v)
		case "max_depth":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("max_depth=%q: expected a whole number >= 0 (0 = unlimited)", v))
				continue
			}
			s.MaxDepth = n
		case "render":
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				errs = append(errs, fmt.Errorf("render=%q: expected true or false", v))
				continue
			}
			s.Render = b
		case "wait_selector":
			s.WaitSelector = strings.TrimSpace(v)
		case "scroll":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("scroll=%q: expected a whole number >= 0", v))
				continue
			}
			s.Scroll = n
		default:
			errs = append(errs, fmt.Errorf("unknown argument %q; follow takes %s", k, strings.Join(argNames, ", ")))
		}
	}
	if len(s.StartURLs) == 0 {
		errs = append(errs, errors.New("no start URLs: pass -a start_urls=URL[,URL...]"))
	}
	for _, u := range s.StartURLs {
		if _, err := spider.ParseURL(u); err != nil {
			errs = append(errs, fmt.Errorf("start_urls: %v; give absolute http(s) URLs", err))
		}
	}
	if s.Follow == "" {
		s.Follow = DefaultFollow
	}
	if sel, err := cascadia.ParseGroup(s.Follow); err != nil {
		errs = append(errs, fmt.Errorf("follow=%q is not a valid CSS selector: %v", s.Follow, err))
	} else {
		s.sel = sel
	}
	if !s.Render && (s.WaitSelector != "" || s.Scroll > 0) {
		errs = append(errs, errors.New("wait_selector and scroll need -a render=true"))
	}
	if s.WaitSelector != "" {
		if _, err := cascadia.ParseGroup(s.WaitSelector); err != nil {
			errs = append(errs, fmt.Errorf("wait_selector=%q is not a valid CSS selector: %v", s.WaitSelector, err))
		}
	}
	for i, d := range s.Domains {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "."))
		if d == "" || strings.ContainsAny(d, "/:") {
			errs = append(errs, fmt.Errorf("allowed_domains: %q is not a domain; give host names such as example.com", s.Domains[i]))
		}
		s.Domains[i] = d
	}
	return errors.Join(errs...)
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Settings turns on rendering (RENDER_JS, RENDER_WAIT_SELECTOR) when the
// render argument asks for it.
func (s *Spider) Settings() map[string]any {
	if !s.Render {
		return nil
	}
	m := map[string]any{"RENDER_JS": true}
	if s.WaitSelector != "" {
		m["RENDER_WAIT_SELECTOR"] = s.WaitSelector
	}
	return m
}

// withScroll sets the render_scroll meta of req when the scroll argument
// asks for it.
func (s *Spider) withScroll(req *spider.Request) *spider.Request {
	if req != nil && s.Render && s.Scroll > 0 {
		req.Set("render_scroll", s.Scroll)
	}
	return req
}

// AllowedDomains returns the domains the crawl may visit: Domains, or the
// host names of the start URLs.
func (s *Spider) AllowedDomains() []string {
	if len(s.Domains) > 0 {
		return s.Domains
	}
	var out []string
	for _, raw := range s.StartURLs {
		if u, err := spider.ParseURL(raw); err == nil {
			h := strings.ToLower(u.Hostname())
			if !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

// allowed reports whether host (a host name without port) is one of the
// allowed domains or a subdomain of one.
func (s *Spider) allowed(host string, domains []string) bool {
	host = strings.ToLower(host)
	for _, d := range domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// Start yields a request for each start URL; invalid ones are errors.
func (s *Spider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for _, u := range s.StartURLs {
			if ctx.Err() != nil {
				return
			}
			req, err := spider.NewRequest(u, nil)
			if !yield(s.withScroll(req), err) {
				return
			}
		}
	}
}

// Parse emits the page's item and follows its links that stay inside the
// allowed domains and the maximum depth. Non-HTML pages give an item with
// an empty title and no links.
func (s *Spider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	depth := 0
	if res.Request != nil {
		depth = res.Request.Depth
	}
	page := Page{URL: res.URL.String(), Status: res.Status, Depth: depth}
	doc, err := res.Doc()
	if err != nil {
		out.Item(page)
		if errors.Is(err, spider.ErrNotHTML) {
			return nil
		}
		return err
	}
	page.Title = strings.TrimSpace(doc.Find("title").First().Text())
	out.Item(page)
	if s.MaxDepth > 0 && depth >= s.MaxDepth {
		return nil
	}
	sel := s.sel
	if sel == nil {
		g, err := cascadia.ParseGroup(s.Follow)
		if err != nil {
			return fmt.Errorf("follow selector %q: %w", s.Follow, err)
		}
		sel = g
	}
	domains := s.AllowedDomains()
	for _, n := range cascadia.QueryAll(doc.Nodes[0], sel) {
		var ref string
		for _, a := range n.Attr {
			if a.Key == "href" || (ref == "" && a.Key == "src") {
				ref = a.Val
			}
		}
		if ref == "" {
			continue
		}
		req, err := res.Follow(ref, nil)
		if err != nil {
			continue // mailto:, javascript:, malformed
		}
		if !s.allowed(req.URL.Hostname(), domains) {
			continue
		}
		out.Request(s.withScroll(req))
	}
	return nil
}
