package engine

import (
	"context"

	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/spider"
)

// output is the spider.Output given to callbacks and errbacks (scrape.go).
// An item goes through the item pipelines at once, on the callback's
// goroutine (processItem, at most CONCURRENT_ITEMS at a time); a request
// goes to the loop (loop.go) at once, as an evRequest event, which
// enqueues it before the job that produced it is acknowledged. FollowAll
// sends the links of a selection together, up to outputBatch an event, so
// a page of links costs the loop one wake-up, not one per link. Follow
// and FollowAll count and skip links that do not parse. Safe for
// concurrent use, as spider.Output promises: it holds no state.
type output struct {
	e   *Engine
	ctx context.Context
}

// outputBatch is the most requests FollowAll sends in one event.
const outputBatch = 32

func (o *output) Item(item any) {
	if item == nil {
		return
	}
	o.e.processItem(o.ctx, item)
}

func (o *output) Request(req *spider.Request) {
	if req == nil {
		return
	}
	o.e.events <- event{kind: evRequest, req: req}
}

func (o *output) Follow(res *spider.Response, ref string, cb spider.Callback) {
	if req := o.follow(res, ref, cb); req != nil {
		o.Request(req)
	}
}

func (o *output) FollowAll(res *spider.Response, sel *goquery.Selection, cb spider.Callback) {
	var batch []*spider.Request
	for _, ref := range spider.Hrefs(sel) {
		req := o.follow(res, ref, cb)
		if req == nil {
			continue
		}
		batch = append(batch, req)
		if len(batch) == outputBatch {
			o.e.events <- event{kind: evRequest, reqs: batch}
			batch = nil
		}
	}
	if len(batch) > 0 {
		o.e.events <- event{kind: evRequest, reqs: batch}
	}
}

// follow makes the request for link ref of res, or counts and skips the
// link when it does not parse.
func (o *output) follow(res *spider.Response, ref string, cb spider.Callback) *spider.Request {
	req, err := res.NewRequest(ref, cb)
	if err != nil {
		o.e.stats.Inc("engine/invalid_links", 1)
		o.e.log.Debug().Err(err).Msg("skipping invalid link")
		return nil
	}
	return req
}
