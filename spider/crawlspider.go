package spider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gocrawl/gocrawl/spider/linkextract"
)

// MetaRule is the meta key of a CrawlSpider's requests for rules with a
// Callback or an Errback, when it has several such rules: the index, in
// Rules, of the rule whose link the request follows. Requests are
// persisted with it (JOBDIR), so keep the order of Rules stable between a
// crawl and its resumption. The requests of a spider's only rule with a
// Callback need no index (ParseRule knows which rule it is), nor do those
// of rules that only follow (their callback is FollowRules).
const MetaRule = "rule"

// Rule says which links of a page a CrawlSpider follows and what it does
// with their responses: Scrapy's Rule.
type Rule struct {
	// Extractor finds the rule's links on a page; nil means every <a> and
	// <area> link except binary files (linkextract.Options{}).
	Extractor *linkextract.Extractor
	// Callback handles the responses of the rule's links, sending items
	// and requests to its Output as any callback does. The CrawlSpider
	// calls it (requests carry the rule's index, see MetaRule), so it may
	// be a method value (s.ParseBook) or a closure, with JOBDIR too.
	Callback Callback
	// Errback handles the rule's requests that fail (see Errback).
	Errback Errback
	// Follow applies the rules again to the responses of this rule's
	// links. A rule without Callback always follows: it would do nothing
	// otherwise.
	Follow bool
	// MaxDepth stops the rule on pages MaxDepth links away from a start
	// page: its requests have a Depth of at most MaxDepth. 0 means no
	// limit of its own (DEPTH_LIMIT still applies to every request).
	MaxDepth int
	// Priority is given to the rule's requests (higher first).
	Priority int
	// ProcessLinks, if set, gets the links the rule kept on a page and
	// returns those to follow: filter, reorder or rewrite them.
	ProcessLinks func(res *Response, links []linkextract.Link) []linkextract.Link
	// ProcessRequest, if set, gets each request the rule makes before it
	// is scheduled and returns it, changed or replaced, or nil to drop it.
	// A replacement must keep Meta[MetaRule] and Callback to reach the
	// rule's Callback.
	ProcessRequest func(req *Request, link linkextract.Link, res *Response) *Request
}

// follows reports whether the rules apply to responses of r's links.
func (r *Rule) follows() bool { return r.Follow || r.Callback == nil }

// linkBufs recycles the link buffers of FollowRules.
var linkBufs = sync.Pool{New: func() any { b := make([]linkextract.Link, 0, 32); return &b }}

var defaultExtractor = sync.OnceValue(func() *linkextract.Extractor {
	return linkextract.MustNew(linkextract.Options{})
})

// CrawlSpider crawls by rules, as Scrapy's CrawlSpider: every page's links
// are offered to the rules in order, the first rule whose extractor keeps
// a link gets it, and the response of that link goes to the rule's
// Callback and, if the rule follows, through the rules again. Embed it and
// set the rules in a constructor, with callbacks as method values:
//
//	type Books struct{ spider.CrawlSpider }
//
//	func New() *Books {
//		s := &Books{}
//		s.StartURLs = []string{"https://books.toscrape.com/"}
//		s.Rules = []spider.Rule{
//			{Extractor: linkextract.MustNew(linkextract.Options{RestrictCSS: []string{"article.product_pod h3"}}),
//				Callback: s.ParseBook},
//			{Extractor: linkextract.MustNew(linkextract.Options{RestrictCSS: []string{"li.next", "div.side_categories"}}),
//				Follow: true},
//		}
//		return s
//	}
//
//	func (*Books) Name() string { return "books" }
//
// The start pages go to Parse, which calls StartCallback and applies the
// rules; the requests of a rule with a Callback go to ParseRule and fail
// to ErrbackRule, which find the rule again from the request's MetaRule;
// those of a rule that only follows go to FollowRules. A spider that defines
// its own Parse shadows the CrawlSpider's: call s.FollowRules (or
// s.CrawlSpider.Parse) from it so that start pages are followed.
//
// Every rule runs on one shared parse of the page (Response.LinkDocument).
// Items and requests from callbacks work as in any spider.
type CrawlSpider struct {
	Base
	// Rules are tried in order for each link.
	Rules []Rule
	// StartCallback, if set, handles the responses of the start requests
	// (Scrapy's parse_start_url) before the rules are applied to them.
	StartCallback Callback
}

// Parse handles a start page: StartCallback, then the rules. A callback
// error is returned after the page's links were followed.
func (c *CrawlSpider) Parse(ctx context.Context, res *Response, out Output) error {
	var cbErr error
	if c.StartCallback != nil {
		cbErr = c.StartCallback(ctx, res, out)
	}
	return errors.Join(cbErr, c.FollowRules(ctx, res, out))
}

// ParseRule handles the response of a rule's link: the rule's Callback,
// then, if the rule follows, the rules. A callback error is returned after
// the page's links were followed.
func (c *CrawlSpider) ParseRule(ctx context.Context, res *Response, out Output) error {
	_, rule, err := c.ruleOf(res.Request)
	if err != nil {
		return err
	}
	var cbErr error
	if rule.Callback != nil {
		cbErr = rule.Callback(ctx, res, out)
	}
	if !rule.follows() {
		return cbErr
	}
	return errors.Join(cbErr, c.FollowRules(ctx, res, out))
}

// ErrbackRule hands a failed request of a rule to the rule's Errback.
func (c *CrawlSpider) ErrbackRule(ctx context.Context, req *Request, err error, out Output) error {
	_, rule, rerr := c.ruleOf(req)
	if rerr != nil {
		return rerr
	}
	if rule.Errback == nil {
		return nil
	}
	return rule.Errback(ctx, req, err, out)
}

// FollowRules applies the rules to res and sends out a request for each
// link a rule keeps, one Depth deeper than res, with the rule's Priority.
// A link goes to the first rule that keeps it. The request's callback is
// ParseRule, with MetaRule set, for a rule with a Callback or an Errback,
// and FollowRules for a rule that only follows. A response that is not
// HTML has no links to follow and is no error.
func (c *CrawlSpider) FollowRules(ctx context.Context, res *Response, out Output) error {
	if len(c.Rules) == 0 {
		return nil
	}
	var doc *linkextract.Document
	var err error
	if c.needsTree() {
		doc, err = res.LinkDocument()
	} else {
		doc, err = res.scanDocument()
	}
	if err != nil {
		if errors.Is(err, ErrNotHTML) {
			return nil
		}
		return err
	}
	depth := 0
	if res.Request != nil {
		depth = res.Request.Depth
	}
	var (
		seen    linkextract.Seen
		parse   Callback // method values, made once per page
		follow  Callback
		errback Errback
		single  = c.onlyCallbackRule() >= 0
	)
	buf := linkBufs.Get().(*[]linkextract.Link)
	links, used := (*buf)[:0], 0
	defer func() {
		clear(links[:used]) // drop the page's nodes before pooling
		*buf = links[:0]
		linkBufs.Put(buf)
	}()
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.MaxDepth > 0 && depth >= r.MaxDepth {
			continue
		}
		ex := r.Extractor
		if ex == nil {
			ex = defaultExtractor()
		}
		links = ex.AppendLinks(links[:0], doc, &seen)
		used = max(used, len(links))
		todo := links
		if r.ProcessLinks != nil {
			todo = r.ProcessLinks(res, slices.Clone(links))
		}
		byIndex := r.Callback != nil || r.Errback != nil
		switch {
		case byIndex && parse == nil:
			parse = c.ParseRule
		case !byIndex && follow == nil:
			follow = c.FollowRules
		}
		if r.Errback != nil && errback == nil {
			errback = c.ErrbackRule
		}
		for _, l := range todo {
			req := &Request{URL: l.ParsedURL(), Depth: depth + 1, Priority: r.Priority}
			if byIndex {
				req.Callback = parse
				if !single {
					req.Meta = Meta{MetaRule: i}
				}
				if r.Errback != nil {
					req.Errback = errback
				}
			} else {
				req.Callback = follow
			}
			if r.ProcessRequest != nil {
				if req = r.ProcessRequest(req, l, res); req == nil {
					continue
				}
			}
			out.Request(req)
		}
	}
	return nil
}

// needsTree reports whether the rules need the page's parsed tree: an
// extractor restricted to a CSS region or to link texts, or a
// ProcessLinks or ProcessRequest hook (it gets links whose Node it may
// walk). Without, the links come from a streaming scan of the page
// (linkextract.ScanDocument): the same links, without building a tree.
func (c *CrawlSpider) needsTree() bool {
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.ProcessLinks != nil || r.ProcessRequest != nil || (r.Extractor != nil && r.Extractor.NeedsTree()) {
			return true
		}
	}
	return false
}

// ErrNoRule is the kind of error for a response or failure that ParseRule
// or ErrbackRule cannot trace back to a rule.
var ErrNoRule = errors.New("request has no rule of this spider")

// onlyCallbackRule returns the index of the only rule with a Callback or
// an Errback, or -1 when there are none or several.
func (c *CrawlSpider) onlyCallbackRule() int {
	only := -1
	for i := range c.Rules {
		if c.Rules[i].Callback != nil || c.Rules[i].Errback != nil {
			if only >= 0 {
				return -1
			}
			only = i
		}
	}
	return only
}

// ruleOf finds the rule of req from its MetaRule, or without one, the
// only rule with a Callback or an Errback.
func (c *CrawlSpider) ruleOf(req *Request) (int, *Rule, error) {
	if req == nil {
		return 0, nil, fmt.Errorf("%w: no request", ErrNoRule)
	}
	v := req.Get(MetaRule)
	if v == nil {
		if i := c.onlyCallbackRule(); i >= 0 {
			return i, &c.Rules[i], nil
		}
	}
	i, ok := -1, false
	switch n := v.(type) {
	case int:
		i, ok = n, true
	case int64:
		i, ok = int(n), true
	case float64:
		i, ok = int(n), float64(int(n)) == n
	case json.Number:
		if x, err := n.Int64(); err == nil {
			i, ok = int(x), true
		}
	}
	if !ok || i < 0 || i >= len(c.Rules) {
		return 0, nil, fmt.Errorf("%w: %s has meta %s=%v but the spider has %d rules (were they changed since the request was queued?)",
			ErrNoRule, req, MetaRule, v, len(c.Rules))
	}
	return i, &c.Rules[i], nil
}
