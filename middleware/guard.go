package middleware

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/gocrawl/gocrawl/spider"
)

// PanicError reports a middleware that panicked, with its name and stack.
type PanicError struct {
	Middleware string
	Value      any
	Stack      []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("middleware %s panicked: %v", e.Middleware, e.Value)
}

// guardFetcher turns a panic in a downloader middleware into an error that
// names it, so one bad middleware does not kill the crawl.
func guardFetcher(name string, f Fetcher, c *spider.Crawler) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (res *spider.Response, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Middleware: name, Value: v, Stack: debug.Stack()}
				if c != nil && c.Stats != nil {
					c.Stats.Inc("middleware/panic_count/"+name, 1)
				}
			}
		}()
		return f.Fetch(ctx, req)
	})
}

func guardHandler(name string, h Handler, c *spider.Crawler) Handler {
	return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Middleware: name, Value: v, Stack: debug.Stack()}
				if c != nil && c.Stats != nil {
					c.Stats.Inc("middleware/panic_count/"+name, 1)
				}
			}
		}()
		return h.Handle(ctx, res, out)
	})
}
