package middleware

import (
	"context"
	"strconv"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterSpider("Depth", newDepth) }

// Depth makes every request a callback produces one level deeper than the
// response it came from (Response.NewRequest already does; requests built with
// spider.NewRequest start at 0 and are fixed here), and keeps the depth
// stats: request_depth_max, and request_depth_count/<depth> with
// DEPTH_STATS_VERBOSE. Requests beyond DEPTH_LIMIT are not counted; the
// scheduler drops them (it also applies DEPTH_PRIORITY), so start requests
// and retries obey the limit too.
type Depth struct {
	limit   int
	verbose bool
	stats   *stats.Collector
}

func newDepth(c *spider.Crawler) (Spider, error) {
	return &Depth{limit: c.Settings.Int("DEPTH_LIMIT"), verbose: c.Settings.Bool("DEPTH_STATS_VERBOSE"), stats: c.Stats}, nil
}

// WrapHandler implements Spider.
func (m *Depth) WrapHandler(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		parent := 0
		if res.Request != nil {
			parent = res.Request.Depth
		}
		return next.Handle(ctx, res, hook(out, depthHook{m: m, parent: parent}))
	})
}

// depthHook sets the depth of the requests found on a page of depth
// parent.
type depthHook struct {
	m      *Depth
	parent int
}

func (h depthHook) onRequest(r *spider.Request) *spider.Request {
	m := h.m
	if r.Depth <= h.parent {
		r.Depth = h.parent + 1
	}
	if m.stats != nil && (m.limit == 0 || r.Depth <= m.limit) {
		m.stats.Max("request_depth_max", float64(r.Depth))
		if m.verbose {
			m.stats.Inc("request_depth_count/"+strconv.Itoa(r.Depth), 1)
		}
	}
	return r
}
