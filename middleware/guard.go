package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/gocrawl/gocrawl/internal/redact"
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

// Error is an error that a middleware itself returned (as
// opposed to one it passed on from further down the chain, such as a
// download error), naming the middleware and the request. errors.Is and
// errors.As see through it to Err.
type Error struct {
	Middleware string
	Request    *spider.Request
	Err        error
}

func (e *Error) Error() string {
	return fmt.Sprintf("middleware %s failed on %s: %v", e.Middleware, RedactedRequest(e.Request), e.Err)
}

// Unwrap returns the middleware's error.
func (e *Error) Unwrap() error { return e.Err }

// ErrNoResponse is the error for a downloader middleware that returned
// neither a response nor an error.
var ErrNoResponse = errors.New("returned neither a response nor an error")

// RedactedRequest returns "METHOD URL" with any password in the URL
// replaced by "xxxxx", for logs and error messages.
func RedactedRequest(req *spider.Request) string {
	if req == nil || req.URL == nil {
		return "<nil request>"
	}
	return req.EffectiveMethod() + " " + RedactedURL(req.URL)
}

// RedactedURL returns u with any password replaced by "xxxxx".
func RedactedURL(u *url.URL) string { return redact.URL(u) }

// guardChain is shared by the guards of one chain. A traversal of the
// chain carries one guardFrame in its context (one allocation per request,
// frame and context value together, not one per middleware), where each
// guard, by its index, records the errors its next returned, so that it
// can tell errors the middleware passed on from errors it made.
type guardChain struct{ n int }

// newGuard returns the index of a new guard of the chain.
func (c *guardChain) newGuard() int { c.n++; return c.n - 1 }

// guardFrame is one traversal's record. busy has bit i set while guard i
// is in a call that uses this frame; a guard that finds its bit set (a
// middleware calling next concurrently, or the chain entered again from
// inside itself) starts a frame of its own, so every call has its own
// record as before. Guards past the 64th always do.
type guardFrame struct {
	mu   sync.Mutex
	busy uint64
	errs []guardErr
}

type guardErr struct {
	guard int
	err   error
}

// enterGuard returns the frame guard i of ch records into, and the context
// that carries it to the guards below.
func enterGuard(ctx context.Context, ch *guardChain, i int) (context.Context, *guardFrame) {
	if f, ok := ctx.Value(ch).(*guardFrame); ok && f.enter(i) {
		return ctx, f
	}
	fc := &frameCtx{Context: ctx, ch: ch}
	fc.f.enter(i)
	return fc, &fc.f
}

// frameCtx is context.WithValue(parent, ch, &f) in one allocation: the
// frame lives in the context that carries it.
type frameCtx struct {
	context.Context
	ch *guardChain
	f  guardFrame
}

// Value returns the frame for its chain, and the parent's values else.
func (c *frameCtx) Value(key any) any {
	if k, ok := key.(*guardChain); ok && k == c.ch {
		return &c.f
	}
	return c.Context.Value(key)
}

// enter claims bit i, forgetting what an earlier call of guard i left.
func (f *guardFrame) enter(i int) bool {
	if i >= 64 {
		return false // never shared
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.busy&(1<<i) != 0 {
		return false
	}
	f.busy |= 1 << i
	f.forget(i)
	return true
}

// leave releases bit i.
func (f *guardFrame) leave(i int) {
	if i >= 64 {
		return
	}
	f.mu.Lock()
	f.busy &^= 1 << i
	f.forget(i)
	f.mu.Unlock()
}

func (f *guardFrame) forget(i int) {
	if len(f.errs) > 0 {
		f.errs = slices.DeleteFunc(f.errs, func(e guardErr) bool { return e.guard == i })
	}
}

// add records err, returned to guard i's middleware by its next.
func (f *guardFrame) add(i int, err error) {
	f.mu.Lock()
	f.errs = append(f.errs, guardErr{i, err})
	f.mu.Unlock()
}

// has reports whether err is, or wraps, one that guard i's next returned.
func (f *guardFrame) has(i int, err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.errs {
		if e.guard == i && errors.Is(err, e.err) {
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

// guardFetcher wraps downloader middleware m (named name) around next so
// that a panic, or an error the middleware made itself, becomes an error
// naming it and the request, and one bad middleware does not kill the
// crawl. ch is the chain's shared guard state.
func guardFetcher(name string, m Downloader, next Fetcher, c *spider.Crawler, ch *guardChain) Fetcher {
	i := ch.newGuard()
	inner := FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		res, err := next.Fetch(ctx, req)
		if err != nil {
			if f, ok := ctx.Value(ch).(*guardFrame); ok {
				f.add(i, err)
			}
		}
		return res, err
	})
	f := m.WrapFetcher(inner)
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (res *spider.Response, err error) {
		ctx, fr := enterGuard(ctx, ch, i)
		defer fr.leave(i)
		defer func() {
			if v := recover(); v != nil {
				res, err = nil, &PanicError{Middleware: name, Request: req, Value: v, Stack: debug.Stack()}
				count(c, "middleware/panic_count/"+name)
			}
		}()
		res, err = f.Fetch(ctx, req)
		switch {
		case err == nil && res == nil:
			count(c, "middleware/error_count/"+name)
			return nil, &Error{Middleware: name, Request: req, Err: ErrNoResponse}
		case err != nil && !fr.has(i, err) && !intentional(err):
			count(c, "middleware/error_count/"+name)
			return nil, &Error{Middleware: name, Request: req, Err: err}
		}
		return res, err
	})
}

// guardHandler is guardFetcher for spider middlewares.
func guardHandler(name string, m Spider, next Handler, c *spider.Crawler, ch *guardChain) Handler {
	i := ch.newGuard()
	inner := HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		err := next.Handle(ctx, res, out)
		if err != nil {
			if f, ok := ctx.Value(ch).(*guardFrame); ok {
				f.add(i, err)
			}
		}
		return err
	})
	h := m.WrapHandler(inner)
	return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) (err error) {
		ctx, fr := enterGuard(ctx, ch, i)
		defer fr.leave(i)
		defer func() {
			if v := recover(); v != nil {
				err = &PanicError{Middleware: name, Request: res.Request, Value: v, Stack: debug.Stack()}
				count(c, "middleware/panic_count/"+name)
			}
		}()
		err = h.Handle(ctx, res, out)
		if err != nil && !fr.has(i, err) && !intentional(err) {
			count(c, "middleware/error_count/"+name)
			return &Error{Middleware: name, Request: res.Request, Err: err}
		}
		return err
	})
}

func count(c *spider.Crawler, key string) {
	if c != nil && c.Stats != nil {
		c.Stats.Inc(key, 1)
	}
}
