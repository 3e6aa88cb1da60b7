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
//     unlimited; 1 = the start pages and the pages they link to).
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

	sel cascadia.Matcher
}

// New returns a follow spider with the default selector.
func New() *Spider { return &Spider{Follow: DefaultFollow} }

// Name returns "follow".
func (*Spider) Name() string { return "follow" }

var argNames = []string{"allowed_domains", "follow", "max_depth", "start_urls"}

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
			if !yield(spider.NewRequest(u, nil)) {
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
		out.Request(req)
	}
	return nil
}
