package spider

import "context"

// Change statuses of a response (Response.Change), set when the crawl
// keeps recrawl records (a JOBDIR or REDIS_URL job, or continuous mode;
// see docs/recrawl.md). The empty string means the crawl keeps none, or
// the response says nothing about the page's content (a redirect, a 5xx).
const (
	ChangeNew       = "new"       // the URL's first visit
	ChangeChanged   = "changed"   // the content differs from the last visit
	ChangeUnchanged = "unchanged" // 304 Not Modified, or the same content fingerprint
	ChangeGone      = "gone"      // 404 or 410
)

// Meta keys of a page request found in a sitemap: its <lastmod> (a
// string in RFC 3339 form) and its
// <changefreq> ("daily"...). The sitemap spider sets them; a revisit
// schedule takes them as hints (docs/recrawl.md).
const (
	MetaSitemapLastMod    = "sitemap_lastmod"
	MetaSitemapChangeFreq = "sitemap_changefreq"
)

// NotModifiedHandler is implemented by a spider that wants to see the 304
// Not Modified answers of a recrawl. Without it a 304 calls no callback:
// the page is unchanged, there is nothing new to parse. NotModified gets
// the 304 response (no body; Request is the revisit) and may emit items
// and requests as a callback does; it is called instead of the request's
// callback and outside the spider middlewares.
type NotModifiedHandler interface {
	NotModified(ctx context.Context, res *Response, out Output) error
}
