package sitemap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

// MetaDepth is the meta key of sitemap requests: how many sitemap indexes
// were followed to reach the sitemap (0 for Spider.SitemapURLs and the
// sitemaps robots.txt lists).
const MetaDepth = "sitemap_depth"

// Rule sends the page URLs of the sitemaps that match Pattern to Callback:
// Scrapy's sitemap_rules.
type Rule struct {
	// Pattern is matched against each page URL (unanchored); nil matches
	// every URL.
	Pattern *regexp.Regexp
	// Callback handles the pages; nil means the spider's Parse. It must be
	// a method of the spider (s.ParseProduct) to be persisted with JOBDIR.
	Callback spider.Callback
}

// Spider crawls the pages sitemaps list, as Scrapy's SitemapSpider. Embed
// it, give it the sitemaps (or the site's robots.txt, whose "Sitemap:"
// lines name them) and say which pages go to which callback:
//
//	type Shop struct{ sitemap.Spider }
//
//	func New() *Shop {
//		s := &Shop{}
//		s.SitemapURLs = []string{"https://shop.example/robots.txt"}
//		s.Rules = []sitemap.Rule{
//			{Pattern: regexp.MustCompile(`/product/`), Callback: s.ParseProduct},
//			{Pattern: regexp.MustCompile(`/category/`), Callback: s.ParseCategory},
//		}
//		return s
//	}
//
//	func (*Shop) Name() string { return "shop" }
//
// Sitemap files go to ParseSitemap: XML urlsets and sitemap indexes, text
// sitemaps, gzip-compressed or not (a .xml.gz file or Content-Encoding),
// and robots.txt files. An index's sitemaps are followed (Follow chooses
// which), a urlset's pages are requested with the first Rule whose
// Pattern matches (pages no rule matches are skipped; without Rules every
// page goes to Parse).
//
// Sitemaps are untrusted: a file is read up to SITEMAP_MAX_SIZE bytes
// after decompression (the download is cut there too) and SITEMAP_MAX_URLS
// entries, indexes are followed SITEMAP_MAX_DEPTH deep, an index listing
// itself is skipped; each limit hit is logged once with the sitemap's URL
// and counted in the stats (sitemap/limit/...). A malformed sitemap is an
// error for that file only: what was read before the problem is used, and
// the callback error names the file and line.
type Spider struct {
	// Base gives StartURLs (requested too, with Parse as callback),
	// Domains and CustomSettings.
	spider.Base
	// SitemapURLs are sitemap, sitemap index or robots.txt URLs.
	SitemapURLs []string
	// Rules route page URLs to callbacks; the first match wins.
	Rules []Rule
	// Follow chooses the sitemaps of an index to follow: those whose URL
	// matches one of these (Scrapy's sitemap_follow); empty follows all.
	Follow []*regexp.Regexp
	// AlternateLinks also requests each page's alternate-language
	// versions (<xhtml:link rel="alternate" hreflang="...">).
	AlternateLinks bool
	// Since keeps only pages modified at or after it (by <lastmod>; pages
	// without one are kept): an incremental crawl.
	Since time.Time
	// Filter, if set, decides for each entry (a page of a urlset or text
	// sitemap, or a sitemap of an index) whether to use it, after Follow
	// and Since.
	Filter func(kind Kind, e Entry) bool
	// MaxSize, MaxURLs and MaxDepth override SITEMAP_MAX_SIZE,
	// SITEMAP_MAX_URLS and SITEMAP_MAX_DEPTH when positive.
	MaxSize  int64
	MaxURLs  int
	MaxDepth int
}

// limits are a crawl's sitemap limits.
type limits struct {
	Limits
	depth int
}

// limits reads the settings of the crawl running ctx (the protocol's
// defaults outside a crawl) and the spider's overrides.
func (s *Spider) limits(ctx context.Context) limits {
	l := limits{depth: 3}
	if c := spider.CrawlerFrom(ctx); c != nil && c.Settings != nil {
		l.MaxSize = int64(c.Settings.Int("SITEMAP_MAX_SIZE"))
		l.MaxURLs = c.Settings.Int("SITEMAP_MAX_URLS")
		l.depth = c.Settings.Int("SITEMAP_MAX_DEPTH")
	}
	if s.MaxSize > 0 {
		l.MaxSize = s.MaxSize
	}
	if s.MaxURLs > 0 {
		l.MaxURLs = s.MaxURLs
	}
	if s.MaxDepth > 0 {
		l.depth = s.MaxDepth
	}
	l.Limits = l.Limits.withDefaults()
	return l
}

// Start yields a request for each of SitemapURLs (to ParseSitemap), then
// for each of StartURLs (to Parse).
func (s *Spider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		lim := s.limits(ctx)
		for _, u := range s.SitemapURLs {
			if ctx.Err() != nil {
				return
			}
			req, err := spider.NewRequest(u, nil)
			if err == nil {
				req = s.sitemapRequest(req, 0, lim)
			} else {
				err = fmt.Errorf("sitemap: %w", err)
			}
			if !yield(req, err) {
				return
			}
		}
		s.Base.Start(ctx)(yield)
	}
}

// sitemapRequest makes req a request for a sitemap of the given depth:
// ParseSitemap as callback, SitemapError as errback, and the download
// cut at the size limit.
func (s *Spider) sitemapRequest(req *spider.Request, depth int, lim limits) *spider.Request {
	req.Callback, req.Errback = s.ParseSitemap, s.SitemapError
	req.Set(MetaDepth, depth)
	req.Set(downloader.MetaDownloadMaxSize, lim.MaxSize)
	return req
}

// Parse is the callback of pages without a rule's callback. The embedding
// spider is expected to define its own; this one reports that it did not.
func (s *Spider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	return fmt.Errorf("sitemap: no callback for %s: define a Parse method on your spider or give the rules callbacks", res.URL)
}

// crawlLog returns the crawl's logger and a stats incrementer (no-ops
// outside a crawl).
func crawlLog(ctx context.Context) (zerolog.Logger, func(string)) {
	c := spider.CrawlerFrom(ctx)
	if c == nil {
		return zerolog.Nop(), func(string) {}
	}
	return c.Log, func(key string) {
		if c.Stats != nil {
			c.Stats.Inc(key, 1)
		}
	}
}

// ParseSitemap handles a sitemap, a sitemap index or a robots.txt: it
// requests the sitemaps an index or robots.txt lists and the pages a
// sitemap lists. Limits hit are logged; a malformed file is returned as an
// error after what could be read was used.
func (s *Spider) ParseSitemap(ctx context.Context, res *spider.Response, out spider.Output) error {
	lim := s.limits(ctx)
	log, count := crawlLog(ctx)
	depth := 0
	if res.Request != nil {
		depth = metaInt(res.Request.Get(MetaDepth))
	}
	if strings.HasSuffix(res.URL.Path, "/robots.txt") {
		count("sitemap/robots")
		for _, u := range RobotsSitemaps(res.Body, res.URL, lim.MaxURLs) {
			s.requestSitemap(out, res, u, depth, lim)
		}
		return nil
	}
	f, err := Parse(bytes.NewReader(res.Body), lim.Limits)
	switch {
	case errors.Is(err, ErrTooLarge):
		count("sitemap/limit/size")
		log.Warn().Str("url", res.URL.Redacted()).Int64("limit", lim.MaxSize).Int("entries_used", len(f.Entries)).
			Msg("sitemap is larger than SITEMAP_MAX_SIZE after decompression: the rest of it is ignored")
		err = nil
	case errors.Is(err, ErrMalformed):
		count("sitemap/malformed")
	case errors.Is(err, ErrNotSitemap):
		count("sitemap/not_sitemap")
	}
	if f.Truncated {
		count("sitemap/limit/urls")
		log.Warn().Str("url", res.URL.Redacted()).Int("limit", lim.MaxURLs).
			Msgf("sitemap lists more than SITEMAP_MAX_URLS (%d) entries: the rest are ignored", lim.MaxURLs)
	}
	if f.Invalid > 0 {
		count("sitemap/invalid_entries")
		log.Debug().Str("url", res.URL.Redacted()).Int("invalid", f.Invalid).Msg("sitemap entries without a usable URL skipped")
	}
	if f.Kind != 0 {
		count("sitemap/" + f.Kind.String())
	}
	if f.Kind == Index {
		s.followIndex(ctx, res, out, f, depth, lim)
	} else {
		s.requestPages(res, out, f)
	}
	if err != nil {
		return fmt.Errorf("sitemap %s: %w (entries read before the problem, and used: %d)", res.URL.Redacted(), err, len(f.Entries))
	}
	return nil
}

// followIndex requests the sitemaps of an index, within the depth limit.
func (s *Spider) followIndex(ctx context.Context, res *spider.Response, out spider.Output, f *File, depth int, lim limits) {
	log, count := crawlLog(ctx)
	if depth+1 > lim.depth {
		count("sitemap/limit/depth")
		log.Warn().Str("url", res.URL.Redacted()).Int("limit", lim.depth).Int("sitemaps", len(f.Entries)).
			Msgf("sitemap index nested deeper than SITEMAP_MAX_DEPTH (%d): its sitemaps are not followed", lim.depth)
		return
	}
	self := false
	for _, e := range f.Entries {
		if len(s.Follow) > 0 && !matchAny(s.Follow, e.Loc) {
			continue
		}
		if s.Filter != nil && !s.Filter(Index, e) {
			continue
		}
		if sameURL(res.URL, e.Loc) {
			self = true
			continue
		}
		s.requestSitemap(out, res, e.Loc, depth+1, lim)
	}
	if self {
		count("sitemap/self_reference")
		log.Warn().Str("url", res.URL.Redacted()).Msg("sitemap index lists itself: that entry is skipped")
	}
}

// requestSitemap sends a request for the sitemap at loc.
func (s *Spider) requestSitemap(out spider.Output, res *spider.Response, loc string, depth int, lim limits) {
	req, err := res.NewRequest(loc, nil)
	if err != nil {
		return // not an http(s) URL: nothing to fetch
	}
	out.Request(s.sitemapRequest(req, depth, lim))
}

// requestPages sends a request for each page of a urlset or text sitemap
// (and its alternates, when asked) that passes Since and Filter, to the
// first rule that matches.
func (s *Spider) requestPages(res *spider.Response, out spider.Output, f *File) {
	for _, e := range f.Entries {
		if !s.Since.IsZero() && !e.LastMod.IsZero() && e.LastMod.Before(s.Since) {
			continue
		}
		if s.Filter != nil && !s.Filter(f.Kind, e) {
			continue
		}
		s.requestPage(res, out, e.Loc, e)
		if s.AlternateLinks {
			for _, a := range e.Alternates {
				s.requestPage(res, out, a.Href, Entry{})
			}
		}
	}
}

// requestPage requests loc with the first rule that matches, carrying
// e's <lastmod> and <changefreq> in its meta (recrawl.HintsOf reads
// them).
func (s *Spider) requestPage(res *spider.Response, out spider.Output, loc string, e Entry) {
	var cb spider.Callback
	if len(s.Rules) > 0 {
		i := -1
		for k, r := range s.Rules {
			if r.Pattern == nil || r.Pattern.MatchString(loc) {
				i = k
				break
			}
		}
		if i < 0 {
			return
		}
		cb = s.Rules[i].Callback
	}
	req, err := res.NewRequest(loc, cb)
	if err != nil {
		return
	}
	setHints(req, e)
	out.Request(req)
}

// SitemapError is the errback of sitemap requests. A sitemap cut at the
// size limit by the downloader is logged as the limit it hit, one dropped
// by a middleware (an HTTP error status, robots.txt) as a sitemap that
// could not be fetched; download errors were logged by the engine.
func (s *Spider) SitemapError(ctx context.Context, req *spider.Request, err error, out spider.Output) error {
	log, count := crawlLog(ctx)
	switch {
	case errors.Is(err, errkind.ResponseTooLarge):
		count("sitemap/limit/size")
		log.Warn().Str("url", req.URL.Redacted()).Int64("limit", s.limits(ctx).MaxSize).
			Msg("sitemap is larger than SITEMAP_MAX_SIZE: its download was cut and the sitemap ignored")
	case errkind.Of(err) == "":
		count("sitemap/not_fetched")
		log.Warn().Err(err).Str("url", req.URL.Redacted()).Msg("sitemap not fetched")
	}
	return nil
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// sameURL reports whether loc is u (ignoring the fragment).
func sameURL(u *url.URL, loc string) bool {
	l, err := u.Parse(strings.TrimSpace(loc))
	if err != nil {
		return false
	}
	l.Fragment, l.RawFragment = "", ""
	v := *u
	v.Fragment, v.RawFragment = "", ""
	return l.String() == v.String()
}

func metaInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}
