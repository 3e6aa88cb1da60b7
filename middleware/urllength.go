package middleware

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterSpider("UrlLength", newURLLength) }

// URLLength (the "UrlLength" spider middleware) drops requests produced by callbacks whose URL is longer than
// URLLENGTH_LIMIT characters (0 disables it): such URLs are usually
// crawler traps (ever-growing query strings or paths). Stat:
// urllength/request_ignored_count.
type URLLength struct {
	limit int
	stats *stats.Collector
	log   zerolog.Logger
}

func newURLLength(c *spider.Crawler) (Spider, error) {
	n := c.Settings.Int("URLLENGTH_LIMIT")
	if n == 0 {
		return nil, nil
	}
	return &URLLength{limit: n, stats: c.Stats, log: c.Log}, nil
}

// WrapHandler implements Spider.
func (m *URLLength) WrapHandler(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		return next.Handle(ctx, res, hook(out, urlLengthHook{m}))
	})
}

// urlLengthHook drops the requests whose URL is longer than the limit.
type urlLengthHook struct{ m *URLLength }

func (h urlLengthHook) onRequest(r *spider.Request) *spider.Request {
	m := h.m
	if n := len(r.URL.String()); n > m.limit {
		if m.stats != nil {
			m.stats.Inc("urllength/request_ignored_count", 1)
		}
		m.log.Debug().Int("length", n).Int("limit", m.limit).Str("url", RedactedURL(r.URL)).
			Msg("ignoring link: URL longer than URLLENGTH_LIMIT")
		return nil
	}
	return r
}
