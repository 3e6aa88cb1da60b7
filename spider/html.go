package spider

import (
	"context"
	"errors"
	"fmt"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
)

// HTMLHandler handles one element a CSS selector matched, as Colly's
// OnHTML callbacks do: sel holds that element (use sel.Attr, sel.Find,
// sel.Text), res the response it is part of. It sends items and requests
// to out; an error is reported with the selector and the others run on.
type HTMLHandler func(ctx context.Context, sel *goquery.Selection, res *Response, out Output) error

// HTMLHandlers runs handlers registered per CSS selector on each response,
// for those who write crawlers the Colly way. Embed it with Base and
// register handlers in a constructor; its Parse runs them:
//
//	type Quotes struct {
//		spider.Base
//		spider.HTMLHandlers
//	}
//
//	func New() *Quotes {
//		s := &Quotes{Base: spider.Base{StartURLs: []string{"https://quotes.toscrape.com/"}}}
//		s.OnHTML("div.quote", func(ctx context.Context, q *goquery.Selection, res *spider.Response, out spider.Output) error {
//			out.Item(Quote{Text: q.Find("span.text").Text()})
//			return nil
//		})
//		s.OnHTML("li.next a[href]", func(ctx context.Context, a *goquery.Selection, res *spider.Response, out spider.Output) error {
//			out.Follow(res, a.AttrOr("href", ""), nil) // nil: back to Parse, so the handlers run again
//			return nil
//		})
//		return s
//	}
//
// Handlers run in the order they were registered, each on its matches in
// document order, all on one parse of the response (Response.Doc). Register
// them before the crawl starts; running them is safe from many goroutines.
type HTMLHandlers struct {
	handlers []htmlHandler
}

type htmlHandler struct {
	selector string
	match    cascadia.Selector
	fn       HTMLHandler
}

// OnHTML registers fn for every element selector matches. It panics on an
// invalid selector, like regexp.MustCompile, since selectors are written in
// code; use AddHTML for selectors that come from users.
func (h *HTMLHandlers) OnHTML(selector string, fn HTMLHandler) {
	if err := h.AddHTML(selector, fn); err != nil {
		panic(err)
	}
}

// AddHTML registers fn for every element selector matches, or returns an
// error naming an invalid selector.
func (h *HTMLHandlers) AddHTML(selector string, fn HTMLHandler) error {
	if fn == nil {
		return fmt.Errorf("spider: OnHTML(%q): nil handler", selector)
	}
	m, err := cascadia.Compile(selector)
	if err != nil {
		return fmt.Errorf("spider: OnHTML(%q): invalid CSS selector: %w", selector, err)
	}
	h.handlers = append(h.handlers, htmlHandler{selector: selector, match: m, fn: fn})
	return nil
}

// Parse runs the handlers on res (see RunHTML).
func (h *HTMLHandlers) Parse(ctx context.Context, res *Response, out Output) error {
	return h.RunHTML(ctx, res, out)
}

// RunHTML runs every handler on its matches in res. A response that is not
// HTML runs none and is no error. Handler errors are joined, each naming
// its selector; a failing handler does not stop the others. Call it from
// any callback (a CrawlSpider rule's, say) to use the handlers there.
func (h *HTMLHandlers) RunHTML(ctx context.Context, res *Response, out Output) error {
	if len(h.handlers) == 0 {
		return nil
	}
	doc, err := res.Doc()
	if err != nil {
		if errors.Is(err, ErrNotHTML) {
			return nil
		}
		return err
	}
	var errs []error
	for _, hd := range h.handlers {
		doc.FindMatcher(hd.match).Each(func(_ int, sel *goquery.Selection) {
			if err := hd.fn(ctx, sel, res, out); err != nil {
				errs = append(errs, fmt.Errorf("OnHTML(%q): %w", hd.selector, err))
			}
		})
	}
	return errors.Join(errs...)
}
