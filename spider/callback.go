package spider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
)

// ErrNotMethod is the kind of error for a callback that cannot be named:
// a closure or a function that is not a method of the spider. Such
// callbacks work in memory but cannot be persisted (JOBDIR, shared queues).
var ErrNotMethod = errors.New("callback is not a method of the spider")

var (
	callbackType = reflect.TypeOf(Callback(nil))
	errbackType  = reflect.TypeOf(Errback(nil))
)

// FuncName returns the name under which fn (a Callback or Errback) can be
// found again on sp: the method name for a method value such as s.ParseBook.
// It returns "" for nil, and an error wrapping ErrNotMethod for closures and
// functions that are not methods of sp.
func FuncName(sp Spider, fn any) (string, error) {
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.IsNil() {
		return "", nil
	}
	full := runtime.FuncForPC(v.Pointer()).Name()
	// A method value compiles to a wrapper named "pkg.(*T).Method-fm" or "pkg.T.Method-fm".
	name, ok := strings.CutSuffix(full, "-fm")
	if !ok {
		return "", fmt.Errorf("%w: %s (use a method such as s.Parse, not a closure)", ErrNotMethod, full)
	}
	method := name[strings.LastIndexByte(name, '.')+1:]
	recv := name[:strings.LastIndexByte(name, '.')]
	typeName := reflect.Indirect(reflect.ValueOf(sp)).Type().Name()
	if !strings.HasSuffix(recv, "(*"+typeName+")") && !strings.HasSuffix(recv, "."+typeName) {
		return "", fmt.Errorf("%w: %s belongs to another type than %s", ErrNotMethod, full, typeName)
	}
	if _, ok := reflect.TypeOf(sp).MethodByName(method); !ok {
		return "", fmt.Errorf("%w: %s has no method %s", ErrNotMethod, typeName, method)
	}
	return method, nil
}

// ResolveCallback finds the Callback method called name on sp. "" means
// sp.Parse.
func ResolveCallback(sp Spider, name string) (Callback, error) {
	if name == "" {
		return sp.Parse, nil
	}
	m := reflect.ValueOf(sp).MethodByName(name)
	if !m.IsValid() {
		return nil, fmt.Errorf("spider %s has no callback method %q", sp.Name(), name)
	}
	if !m.Type().ConvertibleTo(callbackType) {
		return nil, fmt.Errorf("spider %s method %s has type %s, want func(context.Context, *spider.Response, spider.Output) error", sp.Name(), name, m.Type())
	}
	return m.Convert(callbackType).Interface().(Callback), nil
}

// ResolveErrback finds the Errback method called name on sp; "" gives nil.
func ResolveErrback(sp Spider, name string) (Errback, error) {
	if name == "" {
		return nil, nil
	}
	m := reflect.ValueOf(sp).MethodByName(name)
	if !m.IsValid() {
		return nil, fmt.Errorf("spider %s has no errback method %q", sp.Name(), name)
	}
	if !m.Type().ConvertibleTo(errbackType) {
		return nil, fmt.Errorf("spider %s method %s has type %s, want func(context.Context, *spider.Request, error, spider.Output) error", sp.Name(), name, m.Type())
	}
	return m.Convert(errbackType).Interface().(Errback), nil
}

// Callbacks returns the callback and errback to use for req on sp,
// resolving stored names when the functions are not set.
func Callbacks(sp Spider, req *Request) (Callback, Errback, error) {
	cb, eb := req.Callback, req.Errback
	var err error
	if cb == nil {
		if cb, err = ResolveCallback(sp, req.CallbackName); err != nil {
			return nil, nil, err
		}
	}
	if eb == nil && req.ErrbackName != "" {
		if eb, err = ResolveErrback(sp, req.ErrbackName); err != nil {
			return nil, nil, err
		}
	}
	return cb, eb, nil
}

// NameCallbacks fills req.CallbackName and req.ErrbackName from its
// functions, for persistence. It fails with ErrNotMethod for closures.
func NameCallbacks(sp Spider, req *Request) error {
	if req.Callback != nil {
		n, err := FuncName(sp, req.Callback)
		if err != nil {
			return fmt.Errorf("request %s: callback: %w", req, err)
		}
		if n == "Parse" {
			n = ""
		}
		req.CallbackName = n
	}
	if req.Errback != nil {
		n, err := FuncName(sp, req.Errback)
		if err != nil {
			return fmt.Errorf("request %s: errback: %w", req, err)
		}
		req.ErrbackName = n
	}
	return nil
}

type crawlerKey struct{}

// WithCrawler returns a context carrying c; the engine gives callbacks such
// a context.
func WithCrawler(ctx context.Context, c *Crawler) context.Context {
	return context.WithValue(ctx, crawlerKey{}, c)
}

// CrawlerFrom returns the crawler running the callback that received ctx,
// or nil outside a crawl.
func CrawlerFrom(ctx context.Context) *Crawler {
	c, _ := ctx.Value(crawlerKey{}).(*Crawler)
	return c
}
