package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/gocrawl/gocrawl/downloader/render"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// This file chooses the download handler of a request, beside the HTTP
// downloader: plain HTTP (package downloader), or headless Chromium
// (package render) for requests that ask to be rendered (the render meta,
// RENDER_SCOPES, RENDER_JS). Both are the innermost step of the downloader
// middleware chain, after throttling admission, so a rendered page is a
// request like any other for the scheduler, the throttler and the stats.

// renderers holds the crawl's renderer, started with the crawl when the
// settings ask for rendering, or at the first request with the render meta.
type renderers struct {
	all    bool            // RENDER_JS
	scopes map[string]bool // RENDER_SCOPES
	opts   render.Options

	mu  sync.Mutex
	r   *render.Renderer
	err error // why no renderer could be made (no browser)
}

// initRender reads the rendering settings; with RENDER_JS or RENDER_SCOPES
// a missing browser is an error now, before anything is fetched.
func (e *Engine) initRender() error {
	opts, err := render.OptionsFromSettings(e.set)
	if err != nil {
		return err
	}
	opts.Throttler = e.thr
	opts.Stats = e.stats
	opts.Log = e.log
	if a, ok := e.sp.(render.PageActor); ok {
		opts.Actor = a
	}
	e.rd = &renderers{all: e.set.Bool("RENDER_JS"), scopes: map[string]bool{}, opts: opts}
	for _, s := range e.set.Strings("RENDER_SCOPES") {
		e.rd.scopes[s] = true
	}
	if render.Enabled(e.set) {
		if _, err := e.rd.get(); err != nil {
			return err
		}
	}
	return nil
}

// get returns the renderer, making it on first use.
func (rs *renderers) get() (*render.Renderer, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.r == nil && rs.err == nil {
		rs.r, rs.err = render.New(rs.opts)
	}
	return rs.r, rs.err
}

func (rs *renderers) close() {
	rs.mu.Lock()
	r := rs.r
	rs.mu.Unlock()
	if r != nil {
		_ = r.Close()
	}
}

// Renderer returns the crawl's renderer, or nil when nothing was rendered
// yet (benchmarks read its memory).
func (e *Engine) Renderer() *render.Renderer {
	e.rd.mu.Lock()
	defer e.rd.mu.Unlock()
	return e.rd.r
}

// send is the download itself: rendered in the browser or fetched over
// HTTP. A rendered page reports its own outcome to the throttler as soon
// as its document has loaded (render.WithReport), which frees its slot of
// the host's scope for the page's subresources.
func (e *Engine) send(ctx context.Context, req *spider.Request, scopes throttling.Scopes, r *run) (*spider.Response, error) {
	if !render.Wanted(req, e.rd.all, e.rd.scopes, scopes) {
		return e.dl.Fetch(ctx, req)
	}
	rd, err := e.rd.get()
	if err != nil {
		return nil, fmt.Errorf("request %s asks to be rendered: %w", req, err)
	}
	e.stats.Inc("render/requests", 1)
	if r != nil {
		ctx = render.WithReport(ctx, func(res *spider.Response, err error) {
			if r.reported.CompareAndSwap(false, true) {
				e.thr.Done(ctx, req, scopes, r.job.SentAt, res, err)
			}
		})
	}
	return rd.Fetch(ctx, req)
}
