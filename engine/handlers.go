package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocrawl/gocrawl/downloader/handler"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// This file chooses the download handler of a request: the HTTP
// downloader (package downloader), or a handler registered in package
// handler, such as headless Chromium (package render, registered when
// imported) for requests that ask to be rendered (the render meta,
// RENDER_SCOPES, RENDER_JS). Every handler is the innermost step of the
// downloader middleware chain, after throttling admission, so a rendered
// page is a request like any other for the scheduler, the throttler and
// the stats.

// handlers are the crawl's registered download handlers, made when the
// crawl is (New), and the rule that sends requests to the render handler.
type handlers struct {
	rendering handler.Rendering
	byName    map[string]handler.Handler
}

// initHandlers makes every registered handler (each checks its settings
// and may look for what it needs, a browser). Settings that ask for a
// handler the program did not link are an error now, before anything is
// fetched.
func (e *Engine) initHandlers() error {
	e.hs = &handlers{rendering: handler.RenderingFromSettings(e.set), byName: map[string]handler.Handler{}}
	deps := handler.Deps{Settings: e.set, Spider: e.sp, Throttler: e.thr, Stats: e.stats, Log: e.log}
	for _, name := range handler.Names() {
		f, ok := handler.Lookup(name)
		if !ok {
			continue
		}
		h, err := f(deps)
		if err != nil {
			e.hs.close()
			return err
		}
		e.hs.byName[name] = h
	}
	if setting, ok := e.hs.rendering.Enabled(); ok && e.hs.byName[handler.Render] == nil {
		return handler.NotLinked(handler.Render, setting)
	}
	return nil
}

// close closes every handler; errors are joined.
func (hs *handlers) close() error {
	var errs []error
	for name, h := range hs.byName {
		if err := h.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing download handler %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Handler returns the crawl's download handler registered under name, or
// nil when the program did not import it. Benchmarks read the renderer's
// memory through it:
//
//	h, _ := e.Handler(handler.Render).(*render.Handler)
func (e *Engine) Handler(name string) handler.Handler {
	return e.hs.byName[name]
}

// send is the download itself: by a registered handler (rendered in the
// browser) or over HTTP. A handler may report the request's own outcome
// to the throttler before it returns (handler.WithReport: a rendered
// page, as soon as its document has loaded), which frees its slot of the
// host's scope for the page's subresources.
func (e *Engine) send(ctx context.Context, req *spider.Request, scopes throttling.Scopes, r *run) (*spider.Response, error) {
	if !e.hs.rendering.Wants(req, scopes) {
		return e.dl.Fetch(ctx, req)
	}
	h := e.hs.byName[handler.Render]
	if h == nil {
		return nil, handler.NotLinked(handler.Render, fmt.Sprintf("request %s (meta %s)", req, handler.MetaRender))
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
