package pqueue

import (
	"math"
	"net/url"

	"github.com/gocrawl/gocrawl/internal/reqnames"
	"github.com/gocrawl/gocrawl/spider"
)

// compactRequest is how the memory store holds a queued request of the
// common kind: a link found on a page (Depth above 0), a GET of an
// http(s) URL with no header, body or meta of its own, and callbacks
// given as functions.
// One object of 96 bytes with 6 pointers takes the place of a
// spider.Request and its url.URL (two objects, about 300 bytes, 19
// pointers): a broad crawl queues a hundred thousand requests in its
// first seconds, and this is most of its heap and of what the garbage
// collector scans. The request is made again, field for field, when it
// leaves the queue; other requests are kept as they are. Start requests
// (Depth 0) are among the others: the engine pulls them lazily, so few
// wait in the queue, and it follows them by identity until they start.
type compactRequest struct {
	host, path, rawQuery string
	referer              string
	callback             spider.Callback
	errback              spider.Errback
	priority, depth      int32
	https                bool
	dontFilter           bool
}

// compact returns r's compact form, or nil when r has anything the
// compact form does not hold (it is then queued as it is).
func compact(r *spider.Request) *compactRequest {
	u := r.URL
	if u == nil || r.Method != "" || r.Header != nil || r.Body != nil || r.Meta != nil ||
		u.Opaque != "" || u.User != nil || u.RawPath != "" || u.OmitHost || u.ForceQuery ||
		u.Fragment != "" || u.RawFragment != "" ||
		r.Priority < math.MinInt32 || r.Priority > math.MaxInt32 || r.Depth <= 0 || r.Depth > math.MaxInt32 {
		return nil
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil
	}
	if reqnames.Get(r) != (reqnames.Names{}) {
		return nil
	}
	return &compactRequest{
		host: u.Host, path: u.Path, rawQuery: u.RawQuery,
		referer:  r.Referer,
		callback: r.Callback, errback: r.Errback,
		priority: int32(r.Priority), depth: int32(r.Depth),
		https: u.Scheme == "https", dontFilter: r.DontFilter,
	}
}

// request makes the request c was made from again: equal in every field
// (a new pointer, as a persistent store returns).
func (c *compactRequest) request() *spider.Request {
	scheme := "http"
	if c.https {
		scheme = "https"
	}
	// One allocation for both.
	b := &struct {
		r spider.Request
		u url.URL
	}{
		u: url.URL{Scheme: scheme, Host: c.host, Path: c.path, RawQuery: c.rawQuery},
	}
	b.r = spider.Request{
		URL: &b.u, Referer: c.referer,
		Callback: c.callback, Errback: c.errback,
		Priority: int(c.priority), Depth: int(c.depth), DontFilter: c.dontFilter,
	}
	return &b.r
}
