package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/gocrawl/gocrawl/internal/callbacks"

	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/spider"
)

// This file is what happens to a download's outcome (step 4 of the package
// doc), as Scrapy's scraper does it: a response goes through the spider
// middlewares to its callback, an error or a dropped request to its
// errback, a panic becomes an error with its stack, and the items a
// callback or errback writes to its Output (output.go) go through the item
// pipelines. Requests they write go back to the loop (loop.go) as events.
// The CLOSESPIDER_PAGECOUNT, _ERRORCOUNT and _ITEMCOUNT limits are checked
// here.

// scrape hands the outcome of req's download to the spider: a reschedule
// (redirect, retry) sends its requests back to the loop, an error goes to
// the errback, a response through the spider middlewares to the callback.
func (e *Engine) scrape(ctx context.Context, req *spider.Request, res *spider.Response, err error) {
	out := &output{e: e, ctx: ctx}
	resched, isResched := errors.AsType[*middleware.RescheduleError](err)
	switch {
	case isResched:
		e.stats.Inc("engine/rescheduled/"+resched.Reason, 1)
		for _, nr := range resched.Requests {
			out.Request(nr)
		}
	case err != nil:
		e.failed(ctx, req, err, out)
	case res == nil:
		e.failed(ctx, req, errors.New("engine: a downloader middleware returned neither a response nor an error"), out)
	default:
		if n := e.pages.Add(1); e.closePages > 0 && n >= e.closePages {
			e.Stop("closespider_pagecount")
		}
		if e.rc != nil {
			if next := e.rc.visited(ctx, req, res); next != nil {
				out.Request(next)
			}
			if e.rc.notModified(ctx, res, out) {
				return
			}
		}
		if herr := e.handle.Handle(ctx, res, out); herr != nil {
			e.callbackError(ctx, res, herr, out)
		}
	}
}

// callback is the innermost spider handler: the request's callback, with
// panics turned into errors carrying the stack.
func (e *Engine) callback(ctx context.Context, res *spider.Response, out spider.Output) (err error) {
	defer func() {
		if v := recover(); v != nil {
			e.stats.Inc("spider_exceptions/panic", 1)
			err = &CallbackPanic{Value: v, Stack: debug.Stack()}
		}
	}()
	if res == nil || res.Request == nil {
		return errors.New("engine: a middleware passed on a response without its request")
	}
	cb, _, err := e.callbacks(res.Request)
	if err != nil {
		return err
	}
	return cb(ctx, res, out)
}

// namedPair is a request's callback and errback resolved from their
// names.
type namedPair struct {
	cb spider.Callback
	eb spider.Errback
}

// callbacks returns req's callback and errback (callbacks.Callbacks). A
// request read back from a JOBDIR queue carries its callbacks by name;
// each pair of names is resolved by reflection once per engine (a few
// microseconds and allocations per page otherwise), then reused.
func (e *Engine) callbacks(req *spider.Request) (spider.Callback, spider.Errback, error) {
	if req.Callback != nil || req.Errback != nil {
		return callbacks.Callbacks(e.sp, req)
	}
	key := callbacks.Stored(req)
	if v, ok := e.named.Load(key); ok {
		p := v.(namedPair)
		return p.cb, p.eb, nil
	}
	cb, eb, err := callbacks.Callbacks(e.sp, req)
	if err != nil {
		return nil, nil, err
	}
	e.named.Store(key, namedPair{cb: cb, eb: eb})
	return cb, eb, nil
}

// CallbackPanic is the error a panicking callback turns into.
type CallbackPanic struct {
	Value any
	Stack []byte
}

func (p *CallbackPanic) Error() string { return fmt.Sprintf("callback panicked: %v", p.Value) }

func (e *Engine) callbackError(ctx context.Context, res *spider.Response, err error, out spider.Output) {
	var drop *middleware.DropError
	if errors.As(err, &drop) {
		e.dropped(ctx, res.Request, drop, out)
		return
	}
	e.stats.Inc("spider_exceptions/count", 1)
	ev := e.log.Error().Err(err).Str("url", res.URL.Redacted())
	var p *CallbackPanic
	if errors.As(err, &p) {
		ev = ev.Str("stack", string(p.Stack))
	}
	ev.Msg("callback failed")
	if n := e.errs.Add(1); e.closeErrors > 0 && n >= e.closeErrors {
		e.Stop("closespider_errorcount")
	}
}

func (e *Engine) failed(ctx context.Context, req *spider.Request, err error, out spider.Output) {
	var drop *middleware.DropError
	if errors.As(err, &drop) {
		e.dropped(ctx, req, drop, out)
		return
	}
	e.log.Warn().Err(err).Str("url", req.URL.Redacted()).Msg("download failed")
	e.errback(ctx, req, err, out)
}

func (e *Engine) dropped(ctx context.Context, req *spider.Request, drop *middleware.DropError, out spider.Output) {
	e.stats.Inc("engine/dropped/"+drop.Reason, 1)
	// The first drop of each reason is worth seeing (a crawl that ends
	// with 0 items because robots.txt was unreachable should say so); the
	// others are counted in the summary.
	ev := e.log.Debug()
	msg := "request dropped"
	if _, seen := e.dropSeen.LoadOrStore(drop.Reason, true); !seen {
		ev = e.log.Info()
		msg = "request dropped; further drops for this reason are logged at DEBUG and counted in the summary"
	}
	ev.Str("url", req.URL.Redacted()).Str("reason", drop.Reason).AnErr("why", drop.Err).Msg(msg)
	e.errback(ctx, req, drop, out)
}

func (e *Engine) errback(ctx context.Context, req *spider.Request, err error, out spider.Output) {
	_, eb, rerr := e.callbacks(req)
	if rerr != nil || eb == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			e.stats.Inc("spider_exceptions/panic", 1)
			e.log.Error().Interface("panic", v).Str("stack", string(debug.Stack())).Str("url", req.URL.Redacted()).Msg("errback panicked")
		}
	}()
	if ebErr := eb(ctx, req, err, out); ebErr != nil {
		e.stats.Inc("spider_exceptions/count", 1)
		e.log.Error().Err(ebErr).Str("url", req.URL.Redacted()).Msg("errback failed")
	}
}

// processItem runs item through the pipelines.
func (e *Engine) processItem(ctx context.Context, item any) {
	e.itemSem <- struct{}{}
	defer func() { <-e.itemSem }()
	for _, p := range e.pipes {
		var err error
		item, err = safeProcess(ctx, p, item)
		if err != nil {
			reason := pipeline.Reason(err)
			e.stats.Inc(stats.ItemDroppedCount, 1)
			e.stats.Inc("item_dropped_reasons_count/"+reason, 1)
			if errors.Is(err, pipeline.ErrFatal) {
				// Items can no longer be written: fetching more pages would
				// only lose theirs.
				e.fail("feed_error", fmt.Errorf("item pipeline %s: %w", p.Name, err))
				return
			}
			if reason == "error" {
				e.log.Error().Err(err).Str("pipeline", p.Name).Msg("item pipeline failed; item dropped")
			}
			return
		}
		if item == nil {
			e.stats.Inc(stats.ItemDroppedCount, 1)
			return
		}
	}
	e.stats.Inc(stats.ItemScrapedCount, 1)
	if n := e.items.Add(1); e.closeItems > 0 && n >= e.closeItems {
		e.Stop("closespider_itemcount")
	}
}

func safeProcess(ctx context.Context, p pipeline.Named, item any) (out any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("item pipeline %s panicked: %v\n%s", p.Name, v, debug.Stack())
		}
	}()
	return p.ProcessItem(ctx, item)
}
