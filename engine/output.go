package engine

import (
	"context"

	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/spider"
)

// output is the spider.Output given to callbacks and errbacks (scrape.go).
// An item goes through the item pipelines at once, on the callback's
// goroutine (processItem, at most CONCURRENT_ITEMS at a time); a request
// goes to the loop (loop.go) as an evRequest event, which enqueues it
// before the job that produced it is acknowledged. Follow and FollowAll
// count and skip links that do not parse.
type output struct {
	e   *Engine
	ctx context.Context
}

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
