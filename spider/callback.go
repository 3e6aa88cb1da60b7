package spider

import (
	"context"
	"errors"
)

// ErrNotMethod is the kind of error for a callback that cannot be named:
// a closure or a function that is not a method of the spider. Such
// callbacks work in memory but cannot be persisted (JOBDIR, shared queues).
var ErrNotMethod = errors.New("callback is not a method of the spider")

type crawlerKey struct{}

// WithCrawler returns a context carrying c; the engine gives callbacks such
// a context.
func WithCrawler(ctx context.Context, c *Crawler) context.Context {
	return context.WithValue(ctx, crawlerKey{}, c)
}

type closeReasonKey struct{}

// WithCloseReason returns a context carrying the reason a crawl ended; the
// engine gives the Close methods of spiders and item pipelines such a
// context.
func WithCloseReason(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, closeReasonKey{}, reason)
}

// CloseReason returns why the crawl ended ("finished", "shutdown",
// "closespider_timeout", ...) in a Close method, or "" for a ctx that does
// not carry one.
func CloseReason(ctx context.Context) string {
	r, _ := ctx.Value(closeReasonKey{}).(string)
	return r
}

// CrawlerFrom returns the crawler running the callback that received ctx,
// or nil outside a crawl.
func CrawlerFrom(ctx context.Context) *Crawler {
	c, _ := ctx.Value(crawlerKey{}).(*Crawler)
	return c
}
