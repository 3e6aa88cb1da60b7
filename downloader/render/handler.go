package render

import (
	"context"
	"fmt"
	"sync"

	"github.com/gocrawl/gocrawl/downloader/handler"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Importing this package registers its download handler under
// handler.Render: the engine then renders the requests that ask for it
// (the render meta, RENDER_JS, RENDER_SCOPES) in headless Chromium.
func init() {
	handler.Register(handler.Render, NewHandler)
}

// Handler is the crawl's download handler for rendered requests: it reads
// the RENDER_* settings when the crawl is made and starts the Renderer at
// the first rendered request (or at once when RENDER_JS or RENDER_SCOPES
// ask for rendering, so that a missing browser stops the crawl before it
// starts).
type Handler struct {
	opts      Options
	rendering handler.Rendering

	mu  sync.Mutex
	r   *Renderer
	err error // why no renderer could be made (no browser)
}

// NewHandler is the handler.Factory of package render. Invalid RENDER_*
// settings are errors naming the setting; with RENDER_JS or RENDER_SCOPES
// a missing browser is one too.
func NewHandler(d handler.Deps) (handler.Handler, error) {
	opts, err := OptionsFromSettings(d.Settings)
	if err != nil {
		return nil, err
	}
	opts.Throttler = d.Throttler
	opts.Stats = d.Stats
	if opts.Stats == nil {
		opts.Stats = stats.New()
	}
	opts.Log = d.Log
	if a, ok := d.Spider.(PageActor); ok {
		opts.Actor = a
	}
	h := &Handler{opts: opts, rendering: handler.RenderingFromSettings(d.Settings)}
	if _, ok := h.rendering.Enabled(); ok {
		if _, err := h.renderer(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// renderer returns the renderer, making it on first use.
func (h *Handler) renderer() (*Renderer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.r == nil && h.err == nil {
		h.r, h.err = New(h.opts)
	}
	return h.r, h.err
}

// Renderer returns the crawl's renderer, or nil while nothing was
// rendered (benchmarks read its memory).
func (h *Handler) Renderer() *Renderer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.r
}

// Wants reports whether req is to be rendered (handler.Rendering: its
// render meta, RENDER_JS, RENDER_SCOPES).
func (h *Handler) Wants(req *spider.Request, scopes throttling.Scopes) bool {
	return h.rendering.Wants(req, scopes)
}

// Fetch renders req (see Renderer.Fetch), counted in render/requests.
func (h *Handler) Fetch(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	r, err := h.renderer()
	if err != nil {
		return nil, fmt.Errorf("request %s asks to be rendered: %w", req, err)
	}
	h.opts.Stats.Inc("render/requests", 1)
	return r.Fetch(ctx, req)
}

// Close ends the browser processes, if any were started.
func (h *Handler) Close() error {
	if r := h.Renderer(); r != nil {
		return r.Close()
	}
	return nil
}
