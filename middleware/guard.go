package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"sync"

	"github.com/gocrawl/gocrawl/spider"
)

// PanicError reports a middleware that panicked, with its name, the
// request it was handling and the stack. The crawl goes on: the request
// fails with this error (its errback gets it).
type PanicError struct {
	Middleware string
	Request    *spider.Request
	Value      any
	Stack      []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("middleware %s panicked on %s: %v", e.Middleware, RedactedRequest(e.Request), e.Value)
}

// MiddlewareError is an error that a middleware itself returned (as
// opposed to one it passed on from further down the chain, such as a
// download error), naming the middleware and the request. errors.Is and
// errors.As see through it to Err.
type MiddlewareError struct {
	Middleware string
	Request    *spider.Request
	Err        error
}

func (e *MiddlewareError) Error() string {
	return fmt.Sprintf("middleware %s failed on %s: %v", e.Middleware, RedactedRequest(e.Request), e.Err)
}

// Unwrap returns the middleware's error.
func (e *MiddlewareError) Unwrap() error { return e.Err }

// ErrNoResponse is the error for a downloader middleware that returned
// neither a response nor an error.
var ErrNoResponse = errors.New("returned neither a response nor an error")

// RedactedRequest returns "METHOD URL" with any password in the URL
// replaced by "xxxxx", for logs and error messages.
func RedactedRequest(req *spider.Request) string {
	if req == nil || req.URL == nil {
		return "<nil request>"
	}
	return req.GetMethod() + " " + RedactedURL(req.URL)
}

// RedactedURL returns u with any password replaced by "xxxxx".
func RedactedURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Redacted()
}

// passed records, for one call of one middleware, the errors its next
// returned, so that the guard can tell errors the middleware passed on from
// errors it made.
type passed struct {
	mu   sync.Mutex
	errs []error
}

func (p *passed) add(err error) {
	p.mu.Lock()
	p.errs = append(p.errs, err)
	p.mu.Unlock()
}

func (p *passed) has(err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.errs {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// intentional reports errors that are outcomes, not failures: drops and
// reschedules.
func intentional(err error) bool {
	var d *DropError
	var r *RescheduleError
	return errors.As(err, &d) || errors.As(err, &r)
}

type guardKey struct{ _ byte }

// guardFetcher wraps downloader middleware m (named name) around next so
// that a panic, or an error the middleware made itself, becomes an error
// naming it and the request, and one bad middleware does not kill the
// crawl.
func guardFetcher(name string, m Downloader, next Fetcher, c *spider.Crawler) Fetcher {
	key := &guardKey{}
	inner := FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		res, err := next.Fetch(ctx, req)
		if err != nil {
			if p, ok := ctx.Value(key).(*passed); ok {
				p.add(err)
			}
		}
		return res, err
	})
	f := m.WrapFetcher(inner)
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (res *spider.Response, err error) {
		p := &passed{}
		defer func() {
			if v := recover(); v != nil {
				res, err = nil, &PanicError{Middleware: name, Request: req, Value: v, Stack: debug.Stack()}
				count(c, "middleware/panic_count/"+name)
			}
		}()
		res, err = f.Fetch(context.WithValue(ctx, key, p), req)
		switch {
		case err == nil && res == nil:
			count(c, "middleware/error_count/"+name)
			return nil, &MiddlewareError{Middleware: name, Request: req, Err: ErrNoResponse}
		case err != nil && !p.has(err) && !intentional(err):
			count(c, "middleware/error_count/"+name)
			return nil, &MiddlewareError{Middleware: name, Request: req, Err: err}
		}
		return res, err
	})
}

// guardHandler is guardFetcher for spider middlewares.
func guardHandler(name string, m Spider, next Handler, c *spider.Crawler) Handler {
	key := &guardKey{}
	inner := HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		err := next.Handle(ctx, res, out)
		if err != nil {
			if p, ok := ctx.Value(key).(*passed); ok {
				p.add(err)
			}
		}
		return err
	})
	h := m.WrapHandler(inner)
	return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) (err error) {
		p := &passed{}
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Middleware: name, Request: res.Request, Value: v, Stack: debug.Stack()}
				count(c, "middleware/panic_count/"+name)
			}
		}()
		err = h.Handle(context.WithValue(ctx, key, p), res, out)
		if err != nil && !p.has(err) && !intentional(err) {
			count(c, "middleware/error_count/"+name)
			return &MiddlewareError{Middleware: name, Request: res.Request, Err: err}
		}
		return err
	})
}

func count(c *spider.Crawler, key string) {
	if c != nil && c.Stats != nil {
		c.Stats.Inc(key, 1)
	}
}
