package render

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gocrawl/gocrawl/spider"
)

// PageActor is implemented by spiders that act on rendered pages before
// their DOM is taken: scroll an infinite list, click "load more", fill a
// form. PageActions is called for every rendered request once the page is
// ready (RENDER_WAIT, RENDER_WAIT_SELECTOR) and after the render_scroll
// meta; p.Request() tells which request it is. It runs under the render's
// deadline (RENDER_TIMEOUT). Requests the page makes meanwhile are
// throttled like the page's other subresources.
//
//	func (s *Feed) PageActions(ctx context.Context, p *render.Page) error {
//		if p.Request().Get("scroll_feed") == nil {
//			return nil
//		}
//		_, err := p.ScrollToBottom(5, time.Second)
//		return err
//	}
type PageActor interface {
	PageActions(ctx context.Context, p *Page) error
}

// Page is a rendered page, handed to PageActor.PageActions.
type Page struct {
	t   *tab
	pr  *pageRun
	ctx context.Context
}

// Request returns the request being rendered.
func (p *Page) Request() *spider.Request { return p.pr.req }

// Context returns the tab's chromedp context, bounded by the render's
// deadline: run any chromedp action with it (chromedp.Run, chromedp.Do).
func (p *Page) Context() context.Context { return p.ctx }

// Eval evaluates a JavaScript expression in the page, awaiting it when it
// is a promise, and returns its JSON value.
func (p *Page) Eval(js string) (json.RawMessage, error) {
	b, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	return json.RawMessage(b), err
}

// EvalInto evaluates js like Eval and decodes its value into v.
func (p *Page) EvalInto(js string, v any) error {
	b, err := p.Eval(js)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// WaitSelector waits until an element matches the CSS selector sel,
// checking every 50 ms, until the render's deadline.
func (p *Page) WaitSelector(sel string) error {
	js := "document.querySelector(" + strconv.Quote(sel) + ") !== null"
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var found bool
		if err := p.EvalInto(js, &found); err != nil {
			return fmt.Errorf("waiting for selector %q: %w", sel, err)
		}
		if found {
			return nil
		}
		select {
		case <-p.ctx.Done():
			return fmt.Errorf("selector %q did not match before the render's deadline: %w", sel, p.ctx.Err())
		case <-tick.C:
		}
	}
}

// Click clicks the first element that matches the CSS selector sel.
func (p *Page) Click(sel string) error {
	var ok bool
	err := p.EvalInto(`(() => { const e = document.querySelector(`+strconv.Quote(sel)+`); if (!e) return false; e.click(); return true })()`, &ok)
	if err == nil && !ok {
		err = fmt.Errorf("no element matches %q", sel)
	}
	return err
}

// ScrollToBottom scrolls to the bottom of the page n times; after each
// scroll it waits up to pause for the page to grow (an infinite list
// loading more), and stops early when it did not. It returns the page's
// final height in pixels.
func (p *Page) ScrollToBottom(n int, pause time.Duration) (int, error) {
	js := fmt.Sprintf(`(async () => {
  const el = document.scrollingElement || document.documentElement;
  for (let i = 0; i < %d; i++) {
    const h = el.scrollHeight;
    window.scrollTo(0, h);
    const t0 = Date.now();
    while (el.scrollHeight <= h && Date.now() - t0 < %d) {
      await new Promise(r => setTimeout(r, 25));
    }
    if (el.scrollHeight <= h) break;
  }
  return el.scrollHeight;
})()`, n, pause.Milliseconds())
	var h int
	err := p.EvalInto(js, &h)
	return h, err
}
