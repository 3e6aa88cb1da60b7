package spider

import (
	"sync"

	"github.com/PuerkitoBio/goquery"
)

// Recorder is an Output that keeps everything in memory, as
// httptest.ResponseRecorder keeps what a handler writes. Use it to test
// callbacks without running a crawl:
//
//	var out spider.Recorder
//	err := s.Parse(ctx, res, &out)
//	// inspect out.Items, out.Requests, out.Errors
type Recorder struct {
	mu       sync.Mutex
	Items    []any
	Requests []*Request
	// Errors holds invalid links met by Follow and FollowAll.
	Errors []error
}

// Item records an item.
func (c *Recorder) Item(item any) {
	c.mu.Lock()
	c.Items = append(c.Items, item)
	c.mu.Unlock()
}

// Request records a request.
func (c *Recorder) Request(req *Request) {
	if req == nil {
		return
	}
	c.mu.Lock()
	c.Requests = append(c.Requests, req)
	c.mu.Unlock()
}

// Follow records a request for ref, or the error for an invalid link.
func (c *Recorder) Follow(res *Response, ref string, cb Callback) {
	req, err := res.NewRequest(ref, cb)
	if err != nil {
		c.mu.Lock()
		c.Errors = append(c.Errors, err)
		c.mu.Unlock()
		return
	}
	c.Request(req)
}

// FollowAll records a request, or an error, for the link of every element
// of sel (see Hrefs).
func (c *Recorder) FollowAll(res *Response, sel *goquery.Selection, cb Callback) {
	for _, ref := range Hrefs(sel) {
		c.Follow(res, ref, cb)
	}
}
