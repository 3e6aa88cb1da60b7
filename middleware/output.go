package middleware

import (
	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/spider"
)

// OutputHooks is an Output that passes a callback's items and requests
// through hooks before sending them on to Next: the way a spider middleware
// sees (and filters or changes) a callback's output. Requests made with
// Follow and FollowAll go through OnRequest too; invalid links are passed
// to Next, which reports them.
//
//	func (m *myMiddleware) WrapHandler(next middleware.Handler) middleware.Handler {
//		return middleware.HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
//			return next.Handle(ctx, res, &middleware.OutputHooks{Next: out,
//				OnRequest: func(r *spider.Request) *spider.Request {
//					if strings.HasSuffix(r.URL.Path, ".pdf") {
//						return nil // drop it
//					}
//					return r
//				}})
//		})
//	}
type OutputHooks struct {
	// Next receives what the hooks let through.
	Next spider.Output
	// OnRequest, when set, is called for every request; it returns the
	// request to send on (the same or a changed one) or nil to drop it.
	OnRequest func(req *spider.Request) *spider.Request
	// OnItem, when set, is called for every item; it returns the item to
	// send on or nil to drop it.
	OnItem func(item any) any
}

// Item implements spider.Output.
func (o *OutputHooks) Item(item any) {
	if o.OnItem != nil {
		if item = o.OnItem(item); item == nil {
			return
		}
	}
	o.Next.Item(item)
}

// Request implements spider.Output.
func (o *OutputHooks) Request(req *spider.Request) {
	if req == nil {
		return
	}
	if o.OnRequest != nil {
		if req = o.OnRequest(req); req == nil {
			return
		}
	}
	o.Next.Request(req)
}

// Follow implements spider.Output.
func (o *OutputHooks) Follow(res *spider.Response, ref string, cb spider.Callback) {
	followLink(o, o.Next, res, ref, cb)
}

// FollowAll implements spider.Output.
func (o *OutputHooks) FollowAll(res *spider.Response, sel *goquery.Selection, cb spider.Callback) {
	followAll(o, o.Next, res, sel, cb)
}

// followLink sends the request for ref through o.Request; an invalid link goes
// to next instead, which fails again and reports it.
func followLink(o, next spider.Output, res *spider.Response, ref string, cb spider.Callback) {
	req, err := res.NewRequest(ref, cb)
	if err != nil {
		next.Follow(res, ref, cb)
		return
	}
	o.Request(req)
}

// followAll follows the link of every element of sel (spider.Hrefs) as
// followLink does.
func followAll(o, next spider.Output, res *spider.Response, sel *goquery.Selection, cb spider.Callback) {
	for _, l := range spider.Hrefs(sel) {
		followLink(o, next, res, l, cb)
	}
}

// requestHook is what the built-in spider middlewares do to each request
// of a callback's output: the request to send on, or nil to drop it.
type requestHook interface {
	onRequest(req *spider.Request) *spider.Request
}

// hooked is OutputHooks for the built-in middlewares: the hook's state is
// a value of H held in the Output itself, so wrapping a response's output
// costs one allocation, where OutputHooks and its closure cost two. Every
// response goes through several of them, links or not.
type hooked[H requestHook] struct {
	next spider.Output
	hook H
}

// hook returns out with h applied to every request it is sent.
func hook[H requestHook](out spider.Output, h H) *hooked[H] {
	return &hooked[H]{next: out, hook: h}
}

// Item implements spider.Output.
func (o *hooked[H]) Item(item any) { o.next.Item(item) }

// Request implements spider.Output.
func (o *hooked[H]) Request(req *spider.Request) {
	if req == nil {
		return
	}
	if req = o.hook.onRequest(req); req != nil {
		o.next.Request(req)
	}
}

// Follow implements spider.Output.
func (o *hooked[H]) Follow(res *spider.Response, ref string, cb spider.Callback) {
	followLink(o, o.next, res, ref, cb)
}

// FollowAll implements spider.Output.
func (o *hooked[H]) FollowAll(res *spider.Response, sel *goquery.Selection, cb spider.Callback) {
	followAll(o, o.next, res, sel, cb)
}
