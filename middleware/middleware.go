// Package middleware holds the two chains a request and its response pass
// through, and the built-in middlewares.
//
// A downloader middleware wraps the download, like an http.RoundTripper
// wraps a transport: it sees the request on the way in and the response or
// error on the way out, and may pass either on, replace it, answer without
// downloading (a cache), drop the request (return a *DropError) or replace
// it with new requests to schedule (return a *RescheduleError: retries,
// redirects). New requests always go back through the scheduler and
// throttling, because they are new starts.
//
// A spider middleware wraps the callback: it sees the response before the
// callback, the callback's output (items and requests, by wrapping the
// Output) and the callback's error.
//
// Both chains are ordered by number as in Scrapy: DOWNLOADER_MIDDLEWARES and
// SPIDER_MIDDLEWARES map registered names to orders, merged over the
// *_BASE settings; lower orders are closer to the engine, higher ones
// closer to the downloader (or the callback). A null order disables a
// middleware. Invalid names and orders fail at start-up naming the entry;
// a middleware that panics or fails is reported with its name and the
// request (PanicError, Error) and the crawl goes on.
//
// Built-in downloader middlewares: Offsite (50), HttpAuth (300),
// DefaultHeaders (400), UserAgent (500), Retry (550), MetaRefresh (580),
// Redirect (600), Sessions (690, on with SESSION_POOL_SIZE), Cookies (700),
// ProxyPool (740, on with PROXY_LIST), HttpProxy (750), HttpCache (900, off
// by default; storage and policies in package httpcache). Built-in spider
// middlewares: HttpError (50), Offsite (500), Referer (700), UrlLength
// (800), Depth (900). docs/middleware.md describes each with its settings,
// and how to write your own.
package middleware

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocrawl/gocrawl/spider"
)

// Fetcher downloads a request.
type Fetcher interface {
	Fetch(ctx context.Context, req *spider.Request) (*spider.Response, error)
}

// FetcherFunc adapts a function to Fetcher.
type FetcherFunc func(ctx context.Context, req *spider.Request) (*spider.Response, error)

// Fetch calls f.
func (f FetcherFunc) Fetch(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	return f(ctx, req)
}

// Downloader is a downloader middleware: it wraps the next Fetcher.
type Downloader interface {
	WrapFetcher(next Fetcher) Fetcher
}

// DownloaderFunc adapts a function to Downloader.
type DownloaderFunc func(next Fetcher) Fetcher

// WrapFetcher calls f.
func (f DownloaderFunc) WrapFetcher(next Fetcher) Fetcher { return f(next) }

// Handler processes a response: the callback at the end of the spider chain.
type Handler interface {
	Handle(ctx context.Context, res *spider.Response, out spider.Output) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, res *spider.Response, out spider.Output) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, res *spider.Response, out spider.Output) error {
	return f(ctx, res, out)
}

// Spider is a spider middleware: it wraps the next Handler.
type Spider interface {
	WrapHandler(next Handler) Handler
}

// SpiderFunc adapts a function to Spider.
type SpiderFunc func(next Handler) Handler

// WrapHandler calls f.
func (f SpiderFunc) WrapHandler(next Handler) Handler { return f(next) }

// ErrDropped is the kind of *DropError.
var ErrDropped = errors.New("request dropped")

// DropError drops a request or response on purpose (robots.txt, offsite,
// HTTP error status): it is counted under its reason, logged at debug
// level, and passed to the request's errback, but is not a crawl error.
type DropError struct {
	// Reason is a short stat-friendly reason ("robots.txt", "offsite").
	Reason string
	// Err optionally carries detail.
	Err error
}

func (e *DropError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("dropped (%s): %v", e.Reason, e.Err)
	}
	return "dropped (" + e.Reason + ")"
}

// Is makes errors.Is(err, ErrDropped) true.
func (e *DropError) Is(target error) bool { return target == ErrDropped }

// Unwrap returns the detail.
func (e *DropError) Unwrap() error { return e.Err }

// Answerer is implemented by downloader middlewares that can answer some
// requests without sending them, such as the HTTP cache. The engine asks
// when a request is scheduled, before throttling: a request a middleware
// promises to answer gets no throttling scopes, so it neither waits for a
// busy or backing-off scope nor counts as a start, and it is marked with
// MetaOffline. WillAnswer must be quick, safe for concurrent use, and must
// not modify req.
type Answerer interface {
	WillAnswer(ctx context.Context, req *spider.Request) bool
}

// MetaOffline is the request meta key the engine sets to true on a request
// that a middleware promised to answer without sending it (see Answerer).
// Such a request skipped throttling, so it must never reach the network:
// if the promise is broken (the cached entry expired meanwhile), the
// innermost fetcher reschedules a copy with MetaOffline set to false, which
// goes through throttling like any other request. Setting it to false
// yourself opts a request out of being answered offline.
const MetaOffline = "offline"

// StartObserver is implemented by downloader middlewares that need to know
// the crawl's first start request (the first one spider.Start yields) before
// any request is fetched: HttpAuth binds credentials without a domain to
// its host. The engine calls ObserveStart once, with a request that must
// not be modified.
type StartObserver interface {
	ObserveStart(req *spider.Request)
}

// Closer is implemented by downloader middlewares that hold resources
// (the HTTP cache's database); they are closed when the crawl ends, with
// the same signature as spiders (spider.Closer) and item pipelines
// (pipeline.Closer). A middleware with the former Close() error method is
// refused when the chain is built, so that it is not silently left open.
type Closer interface {
	Close(ctx context.Context) error
}

// RescheduleError replaces a request's download with new requests, which
// the engine enqueues (with DontFilter when they should bypass the
// duplicate filter). The response or error that caused it has already been
// reported to throttling by the innermost fetcher.
type RescheduleError struct {
	// Requests to schedule instead.
	Requests []*spider.Request
	// Reason for the stats and logs ("retry", "redirect").
	Reason string
	// Err is what caused it, when an error did (errors.Is and errors.As
	// see it), or nil.
	Err error
}

func (e *RescheduleError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("rescheduled (%s) as %d request(s): %v", e.Reason, len(e.Requests), e.Err)
	}
	return fmt.Sprintf("rescheduled (%s) as %d request(s)", e.Reason, len(e.Requests))
}

// Unwrap returns Err.
func (e *RescheduleError) Unwrap() error { return e.Err }
