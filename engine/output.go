package engine

import (
	"context"

	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/spider"
)

// output is the spider.Output given to callbacks and errbacks (scrape.go).
// An item goes through the item pipelines at once, on the callback's
// goroutine (processItem, at most CONCURRENT_ITEMS at a time); requests go
// to the loop (loop.go) in batches: every outputBatch of them as an
// evRequest event, the rest with the job's evFinished, so the loop
// enqueues them before it acknowledges the job that produced them, and a
// page costs the loop one wake-up, not one per link. Follow and FollowAll
// count and skip links that do not parse.
type output struct {
	e       *Engine
	ctx     context.Context
	pending []*spider.Request
}

// outputBatch is the most requests a callback's output holds before
// sending them to the loop.
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
	o.pending = append(o.pending, req)
	if len(o.pending) == outputBatch {
		o.e.events <- event{kind: evRequest, reqs: o.pending}
		o.pending = nil
	}
}

// take returns the requests not yet sent to the loop.
func (o *output) take() []*spider.Request {
	p := o.pending
	o.pending = nil
	return p
}

func (o *output) Follow(res *spider.Response, ref string, cb spider.Callback) {
	req, err := res.NewRequest(ref, cb)
	if err != nil {
		o.e.stats.Inc("engine/invalid_links", 1)
		o.e.log.Debug().Err(err).Msg("skipping invalid link")
		return
	}
	o.Request(req)
}

func (o *output) FollowAll(res *spider.Response, sel *goquery.Selection, cb spider.Callback) {
	for _, ref := range spider.Hrefs(sel) {
		o.Follow(res, ref, cb)
	}
}
