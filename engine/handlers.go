package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocrawl/gocrawl/downloader/handler"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// This file chooses the download handler of a request: the first
// registered handler (package handler) that wants it, such as headless
// Chromium (package render, registered when imported) for requests that
// ask to be rendered (the render meta, RENDER_SCOPES, RENDER_JS), or else
// the HTTP downloader (package downloader). Every handler is the innermost
// step of the downloader middleware chain, after throttling admission, so
// a rendered page is a request like any other for the scheduler, the
// throttler and the stats.

// handlers are the crawl's registered download handlers, made when the
// crawl is (New), in name order.
type handlers struct {
	names []string
	list  []handler.Handler
	// rendering tells the requests that ask for rendering when the program
	// has no renderer (rendered is false): they fail with ErrNotLinked.
	rendering handler.Rendering
	rendered  bool
}

// initHandlers makes every registered handler (each checks its settings
// and may look for what it needs, a browser). Settings that ask for
// rendering in a program without a renderer are an error now, before
// anything is fetched.
func (e *Engine) initHandlers() error {
	e.hs = &handlers{rendering: handler.RenderingFromSettings(e.set)}
	deps := handler.Deps{Settings: e.set, Spider: e.sp, Throttler: e.thr, Stats: e.stats, Log: e.log}
	for _, name := range handler.Names() {
		f, ok := handler.Lookup(name)
		if !ok {
			continue
		}
		h, err := f(deps)
		if err != nil {
			_ = e.hs.close()
			return err
		}
		e.hs.names = append(e.hs.names, name)
		e.hs.list = append(e.hs.list, h)
		e.hs.rendered = e.hs.rendered || name == handler.Render
	}
	if setting, ok := e.hs.rendering.Enabled(); ok && !e.hs.rendered {
		return handler.NotLinked(setting)
	}
	return nil
}

// close closes every handler; errors are joined.
func (hs *handlers) close() error {
	var errs []error
	for i, h := range hs.list {
		if err := h.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing download handler %s: %w", hs.names[i], err))
		}
	}
	return errors.Join(errs...)
}

// Handler returns the crawl's download handler registered under name, or
// nil when the program did not import it. Benchmarks read the renderer's
// memory through it:
//
//	if h, ok := e.Handler(handler.Render).(*render.Handler); ok { h.Renderer() }
func (e *Engine) Handler(name string) handler.Handler {
	for i, n := range e.hs.names {
		if n == name {
			return e.hs.list[i]
		}
	}
	return nil
}

// send is the download itself: by the first handler that wants the
// request (rendered in the browser) or over HTTP. A handler may report the
// request's own outcome to the throttler before it returns
// (handler.WithReport: a rendered page, as soon as its document has
// loaded), which frees its slot of the host's scope for the page's
// subresources.
func (e *Engine) send(ctx context.Context, req *spider.Request, scopes throttling.Scopes, r *run) (*spider.Response, error) {
	for _, h := range e.hs.list {
		if !h.Wants(req, scopes) {
			continue
		}
		if r != nil {
			ctx = handler.WithReport(ctx, func(res *spider.Response, err error) {
				if r.reported.CompareAndSwap(false, true) {
					e.thr.Done(ctx, req, scopes, r.job.SentAt, res, err)
				}
			})
		}
		return h.Fetch(ctx, req)
	}
	if !e.hs.rendered && e.hs.rendering.Wants(req, scopes) {
		return nil, handler.NotLinked(fmt.Sprintf("request %s (meta %s)", req, handler.MetaRender))
	}
	return e.dl.Fetch(ctx, req)
}
