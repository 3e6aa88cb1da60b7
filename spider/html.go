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
// A selector that does not compile (or a nil handler) is not a panic: the
// spider's Open reports it, naming the selector, and the crawl does not
// start. Parse is the one way to run the handlers: use the method value
// (s.HTMLHandlers.Parse) as the callback of a request or of a CrawlSpider
// rule to run them there.
type HTMLHandlers struct {
	handlers []htmlHandler
	errs     []error // registration errors, reported by Open and Parse
}

type htmlHandler struct {
	selector string
	match    cascadia.Selector
	fn       HTMLHandler
}

// OnHTML registers fn for every element selector matches. An invalid
// selector or a nil fn is recorded and reported by Open (so a crawl refuses
// to start) and by Parse.
func (h *HTMLHandlers) OnHTML(selector string, fn HTMLHandler) {
	if fn == nil {
		h.errs = append(h.errs, fmt.Errorf("spider: OnHTML(%q): nil handler", selector))
		return
	}
	m, err := cascadia.Compile(selector)
	if err != nil {
		h.errs = append(h.errs, fmt.Errorf("spider: OnHTML(%q): invalid CSS selector: %w", selector, err))
		return
	}
	h.handlers = append(h.handlers, htmlHandler{selector: selector, match: m, fn: fn})
}

// Open implements Opener: it returns the errors of the OnHTML calls (an
// invalid selector, a nil handler), so that a crawl of a spider with such
// a mistake stops before it starts. A spider that embeds HTMLHandlers and
// has an Open method of its own should call this one from it.
func (h *HTMLHandlers) Open(ctx context.Context, c *Crawler) error {
	return errors.Join(h.errs...)
}

// Parse runs every handler on its matches in res. A response that is not
// HTML runs none and is no error. Handler errors are joined, each naming
// its selector; a failing handler does not stop the others. The errors of
// the OnHTML calls, if any, are returned before anything runs.
func (h *HTMLHandlers) Parse(ctx context.Context, res *Response, out Output) error {
	if len(h.errs) > 0 {
		return errors.Join(h.errs...)
	}
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
