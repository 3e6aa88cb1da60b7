// Package follow is a generic crawler that needs no Go code: it starts at
// some URLs, follows their links while they stay inside the allowed
// domains and a maximum depth, and emits one Page item per response. It is
// a spider.CrawlSpider with one rule, configured by arguments:
//
//	gocrawl run follow -a start_urls=https://example.com/ -a max_depth=2 -O pages.jsonl
//
// Arguments (-a NAME=VALUE):
//
//   - start_urls: absolute http(s) URLs separated by commas or spaces
//     (required);
//   - allowed_domains: comma-separated domains the crawl may visit,
//     subdomains included (default: the hosts of the start URLs);
//   - follow: CSS selector of the elements to take links from, their
//     href or src and those of the elements inside them (default: every
//     <a> and <area> link);
//   - max_depth: links followed from a start URL at most (default 0 =
//     unlimited; 1 = the start pages and the pages they link to);
//   - allow, deny: a regular expression (RE2) a link's URL must match, or
//     must not match, to be followed (use | for alternatives);
//   - deny_extensions: comma-separated file extensions not to follow
//     (default: Scrapy's list of binary files, linkextract.
//     DefaultDenyExtensions; empty follows everything);
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
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/andybalholm/cascadia"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spider/linkextract"
)

// Page is the item emitted for every response.
type Page struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Title  string `json:"title"`
	Depth  int    `json:"depth"`
}

// DefaultFollow is the selector shown for the default: every <a> and
// <area> link of the page.
const DefaultFollow = "a[href]"

// Spider is the follow spider. Create it with New and configure it with
// SetArgs (or set the fields and call SetArgs(nil) to check them and build
// the rule). StartURLs and Domains are those of the embedded spider.Base.
type Spider struct {
	spider.CrawlSpider
	// Follow is the CSS selector of the elements to take links from;
	// DefaultFollow or "" means every <a> and <area> link.
	Follow string
	// MaxDepth limits how many links deep the crawl goes (0 = no limit).
	MaxDepth int
	// Allow and Deny are regular expressions on the links' URLs.
	Allow, Deny string
	// DenyExtensions are the extensions not followed; nil means
	// linkextract.DefaultDenyExtensions.
	DenyExtensions []string
	// Render renders every page in headless Chromium (RENDER_JS).
	Render bool
	// WaitSelector is RENDER_WAIT_SELECTOR when Render is set.
	WaitSelector string
	// Scroll is the render_scroll meta of every request when Render is set.
	Scroll int
}

// New returns a follow spider with the default selector.
func New() *Spider { return &Spider{Follow: DefaultFollow} }

// Name returns "follow".
func (*Spider) Name() string { return "follow" }

var argNames = []string{"allow", "allowed_domains", "deny", "deny_extensions", "follow", "max_depth", "render", "scroll", "start_urls", "wait_selector"}

// SetArgs reads the spider arguments, checks them and builds the rule;
// every problem is reported, each saying what to pass instead.
func (s *Spider) SetArgs(args map[string]string) error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(args)) {
		v := args[k]
		switch k {
		case spider.ArgStartURLs:
			urls, err := spider.ParseStartURLs(v)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s.StartURLs = urls
		case "allowed_domains":
			s.Domains = splitList(v)
		case "follow":
			s.Follow = strings.TrimSpace(v)
		case "allow":
			s.Allow = strings.TrimSpace(v)
		case "deny":
			s.Deny = strings.TrimSpace(v)
		case "deny_extensions":
			s.DenyExtensions = append([]string{}, splitList(v)...)
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
	if _, ok := args[spider.ArgStartURLs]; !ok && len(s.StartURLs) == 0 {
		errs = append(errs, errors.New("no start URLs: pass -a start_urls=URL[,URL...]"))
	}
	for i, d := range s.Domains {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "."))
		if d == "" || strings.ContainsAny(d, "/:") {
			errs = append(errs, fmt.Errorf("allowed_domains: %q is not a domain; give host names such as example.com", s.Domains[i]))
		} else if _, err := linkextract.New(linkextract.Options{AllowDomains: []string{d}}); err != nil {
			_, why, _ := strings.Cut(err.Error(), "AllowDomains[0] ")
			errs = append(errs, fmt.Errorf("allowed_domains: %s", why))
		}
		s.Domains[i] = d
	}
	if s.Follow != "" {
		if _, err := cascadia.ParseGroup(s.Follow); err != nil {
			errs = append(errs, fmt.Errorf("follow=%q is not a valid CSS selector: %v", s.Follow, err))
		}
	}
	if !s.Render && (s.WaitSelector != "" || s.Scroll > 0) {
		errs = append(errs, errors.New("wait_selector and scroll need -a render=true"))
	}
	if s.WaitSelector != "" {
		if _, err := cascadia.ParseGroup(s.WaitSelector); err != nil {
			errs = append(errs, fmt.Errorf("wait_selector=%q is not a valid CSS selector: %v", s.WaitSelector, err))
		}
	}
	for name, re := range map[string]string{"allow": s.Allow, "deny": s.Deny} {
		if _, err := regexp.Compile(re); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a valid regular expression: %v", name, re, err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, s.buildRule())
	}
	return errors.Join(errs...)
}

// buildRule makes the spider's one rule from its fields, naming the
// argument of each problem.
func (s *Spider) buildRule() error {
	opts := linkextract.Options{
		AllowDomains:   s.AllowedDomains(),
		DenyExtensions: s.DenyExtensions,
	}
	if s.Follow != "" && s.Follow != DefaultFollow {
		opts.RestrictCSS = []string{s.Follow}
		opts.Tags, opts.Attrs = []string{"*"}, []string{"href", "src"}
	}
	if s.Allow != "" {
		opts.Allow = []string{s.Allow}
	}
	if s.Deny != "" {
		opts.Deny = []string{s.Deny}
	}
	ex, err := linkextract.New(opts)
	if err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	s.StartCallback = s.ParsePage
	rule := spider.Rule{Extractor: ex, Callback: s.ParsePage, Follow: true, MaxDepth: s.MaxDepth}
	if s.Render && s.Scroll > 0 {
		rule.ProcessRequest = func(req *spider.Request, _ linkextract.Link, _ *spider.Response) *spider.Request {
			return s.withScroll(req)
		}
	}
	s.Rules = []spider.Rule{rule}
	return nil
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

// Start yields a request for each start URL (with the render_scroll meta
// when the scroll argument asks for it); invalid ones are errors.
func (s *Spider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for req, err := range s.CrawlSpider.Start(ctx) {
			if !yield(s.withScroll(req), err) {
				return
			}
		}
	}
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

// AllowedDomains returns the domains the crawl may visit: Domains, or the
// host names of the start URLs.
func (s *Spider) AllowedDomains() []string {
	if len(s.Domains) > 0 {
		return s.Domains
	}
	return s.StartHosts()
}

// Open builds the rule before the crawl when SetArgs was not called (a
// spider configured through its fields).
func (s *Spider) Open(ctx context.Context, c *spider.Crawler) error {
	if len(s.Rules) == 0 {
		return s.buildRule()
	}
	return nil
}

// ParsePage emits the Page item of a response. Non-HTML pages give an item
// with an empty title (and no links to follow).
func (s *Spider) ParsePage(ctx context.Context, res *spider.Response, out spider.Output) error {
	page := Page{URL: res.URL.String(), Status: res.Status}
	if res.Request != nil {
		page.Depth = res.Request.Depth
	}
	// The title comes from the tokenizer pass the rule's link extraction
	// shares (no tree is built), or from the tree when something parsed
	// the page already.
	title, err := res.Title()
	page.Title = title
	out.Item(page)
	if err != nil && !errors.Is(err, spider.ErrNotHTML) {
		return err
	}
	return nil
}
