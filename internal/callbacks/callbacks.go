// Package callbacks names a spider's callbacks and finds them again by
// name: what lets a request whose callback is a method of the spider (not
// a closure) be persisted (JOBDIR, shared queues) and resumed. The engine,
// the request codec and the command line use it; spiders never need it.
package callbacks

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"

	"github.com/gocrawl/gocrawl/internal/reqnames"
	"github.com/gocrawl/gocrawl/spider"
)

var (
	callbackType = reflect.TypeOf(spider.Callback(nil))
	errbackType  = reflect.TypeOf(spider.Errback(nil))
)

// FuncName returns the name under which fn (a spider.Callback or spider.Errback) can be
// found again on sp: the method name for a method value such as s.ParseBook
// (methods promoted from an embedded struct included). It returns "" for
// nil, and an error wrapping spider.ErrNotMethod for closures, plain functions and
// methods of other types.
func FuncName(sp spider.Spider, fn any) (string, error) {
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.Kind() != reflect.Func {
		return "", fmt.Errorf("%w: %T is not a function", spider.ErrNotMethod, fn)
	}
	if v.IsNil() {
		return "", nil
	}
	full := runtime.FuncForPC(v.Pointer()).Name()
	// A method value compiles to a wrapper named "pkg.(*T).Method-fm" or
	// "pkg.T.Method-fm" (T being the type that declares the method).
	name, ok := strings.CutSuffix(full, "-fm")
	if !ok {
		return "", fmt.Errorf("%w: %s (use a method value such as s.Parse, not a closure or a plain function)", spider.ErrNotMethod, full)
	}
	dot := strings.LastIndexByte(name, '.')
	method, recv := name[dot+1:], receiverID(name[:dot])
	spType := reflect.TypeOf(sp)
	if _, ok := spType.MethodByName(method); !ok || !declaresOrEmbeds(spType, recv) {
		return "", fmt.Errorf("%w: %s is not a method of %s", spider.ErrNotMethod, full, spType)
	}
	return method, nil
}

// receiverID turns "pkg/path.(*T[...])" or "pkg/path.T" into "pkg/path.T".
func receiverID(recv string) string {
	recv = strings.Replace(recv, "(*", "", 1)
	recv = strings.TrimSuffix(recv, ")")
	if i := strings.Index(recv, "["); i >= 0 {
		recv = recv[:i]
	}
	return recv
}

// typeID returns "pkg/path.T" for a named type (or pointer to one).
func typeID(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.Name()
	if i := strings.Index(name, "["); i >= 0 {
		name = name[:i]
	}
	return t.PkgPath() + "." + name
}

// declaresOrEmbeds reports whether t is the type recv or embeds it
// (directly or through embedded structs), so that a method of recv is in
// t's method set.
func declaresOrEmbeds(t reflect.Type, recv string) bool {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type) bool
	walk = func(t reflect.Type) bool {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if seen[t] {
			return false
		}
		seen[t] = true
		if typeID(t) == recv {
			return true
		}
		if t.Kind() != reflect.Struct {
			return false
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.Anonymous && walk(f.Type) {
				return true
			}
		}
		return false
	}
	return walk(t)
}

// ResolveCallback finds the spider.Callback method called name on sp. "" means
// sp.Parse.
func ResolveCallback(sp spider.Spider, name string) (spider.Callback, error) {
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
	return m.Convert(callbackType).Interface().(spider.Callback), nil
}

// ResolveErrback finds the spider.Errback method called name on sp; "" gives nil.
func ResolveErrback(sp spider.Spider, name string) (spider.Errback, error) {
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
	return m.Convert(errbackType).Interface().(spider.Errback), nil
}

// Callbacks returns the callback and errback to use for req on sp,
// resolving stored names when the functions are not set.
func Callbacks(sp spider.Spider, req *spider.Request) (spider.Callback, spider.Errback, error) {
	cb, eb := req.Callback, req.Errback
	var err error
	if cb == nil {
		if cb, err = ResolveCallback(sp, Stored(req).Callback); err != nil {
			return nil, nil, err
		}
	}
	if n := Stored(req).Errback; eb == nil && n != "" {
		if eb, err = ResolveErrback(sp, n); err != nil {
			return nil, nil, err
		}
	}
	return cb, eb, nil
}

// Stored returns the callback names a request read back from storage
// carries (see internal/reqnames); zero for any other request.
func Stored(req *spider.Request) reqnames.Names { return reqnames.Get(req) }

// SetStored sets the callback names req carries, as a decoder does.
func SetStored(req *spider.Request, n reqnames.Names) { reqnames.Set(req, n) }

// NameCallbacks stores with req the names of its callback and errback
// (Stored), for persistence. It fails with spider.ErrNotMethod for closures.
func NameCallbacks(sp spider.Spider, req *spider.Request) error {
	if req.Callback != nil {
		n, err := FuncName(sp, req.Callback)
		if err != nil {
			return fmt.Errorf("request %s: callback: %w", req, err)
		}
		if n == "Parse" {
			n = ""
		}
		n0 := Stored(req)
		n0.Callback = n
		SetStored(req, n0)
	}
	if req.Errback != nil {
		n, err := FuncName(sp, req.Errback)
		if err != nil {
			return fmt.Errorf("request %s: errback: %w", req, err)
		}
		n0 := Stored(req)
		n0.Errback = n
		SetStored(req, n0)
	}
	return nil
}
