// Package handler is the registry of download handlers: the ways a request
// can be downloaded besides the HTTP client of package downloader, as
// Scrapy's DOWNLOAD_HANDLERS. A handler's package registers it when it is
// imported, so a program links only the handlers it imports. Package
// render, the headless-browser handler, registers itself under Render:
//
//	import _ "github.com/gocrawl/gocrawl/downloader/render"
//
// The gocrawl command and every cli.Main program import it. The engine
// makes each registered handler once per crawl (New), gives each request
// to the first handler that wants it (Handler.Wants; the render handler
// wants what Rendering picks) or else to the HTTP client, and closes the
// handlers when the crawl ends. A request or a setting that asks for
// rendering in a program that did not link a renderer fails with an error
// wrapping ErrNotLinked that names the package to import.
package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/internal/registry"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Handler downloads the requests it wants, in place of the HTTP client.
// It is the innermost step of the downloader middleware chain, after
// throttling admission, so its requests are requests like any other for
// the scheduler, the throttler and the stats. Wants and Fetch are called
// from many goroutines at once.
type Handler interface {
	// Wants reports whether the handler downloads req; scopes are the
	// request's throttling scopes (nil for a request sent outside the
	// scheduler, such as robots.txt). It must be quick: the engine asks
	// every handler, in name order, for every request, and the first that
	// wants it downloads it; a request no handler wants goes over HTTP.
	Wants(req *spider.Request, scopes throttling.Scopes) bool
	// Fetch downloads req. Errors are best given as *downloader.Error
	// values with a kind (errkind), as the HTTP client's are.
	Fetch(ctx context.Context, req *spider.Request) (*spider.Response, error)
	// Close releases what the handler holds (browser processes); it is
	// called once, when the crawl ends.
	Close() error
}

// Throttler is what a handler may use of the crawl's throttler, to admit
// the requests it makes on its own (a rendered page's subresources):
// *throttling.Throttler implements it.
type Throttler interface {
	Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error)
	Admit(ctx context.Context, scopes throttling.Scopes) (time.Time, error)
	Done(ctx context.Context, req *spider.Request, scopes throttling.Scopes, sentAt time.Time, res *spider.Response, err error)
}

// Deps is what the crawl hands a handler's Factory.
type Deps struct {
	Settings  *settings.Settings
	Spider    spider.Spider
	Throttler Throttler
	Stats     *stats.Collector
	Log       zerolog.Logger
}

// Factory makes a crawl's handler. The engine calls it once, when it is
// made (engine.New), whether or not a request will use the handler: it
// checks the handler's settings (an invalid one is an error naming it) and
// should start nothing costly until the first Fetch, unless the settings
// ask for the handler up front (then a missing dependency, such as a
// browser, is best reported here, before anything is fetched).
type Factory func(d Deps) (Handler, error)

var factories registry.Registry[Factory]

// Register makes a handler available under name; a package calls it from
// its init function. A later registration under the same name replaces
// the earlier one.
func Register(name string, f Factory) { factories.Register(name, f) }

// Lookup returns the factory registered under name.
func Lookup(name string) (Factory, bool) { return factories.Lookup(name) }

// Names returns the names of the registered handlers, sorted.
func Names() []string { return factories.Names() }

// ErrNotLinked is the kind of the error of a request, or of a crawl's
// settings, asking for a handler the program did not import.
var ErrNotLinked = errors.New("download handler not linked into this program")

// RenderImport is the package whose import registers the Render handler.
const RenderImport = "github.com/gocrawl/gocrawl/downloader/render"

// NotLinked returns the ErrNotLinked error of what (a setting, a request)
// asking for rendering: it names the package to import.
func NotLinked(what string) error {
	return fmt.Errorf("%s asks for rendering: %w (the %q download handler); add the import\n\timport _ %q\nto the program (the gocrawl command and cli.Main programs have it)", what, ErrNotLinked, Render, RenderImport)
}

type reportKey struct{}

// WithReport returns a context under which a handler may call fn with the
// request's own outcome before Fetch returns (a rendered page's main
// document, once it has loaded, before scripts, subresources and waits
// are over). The engine uses it to free the request's throttling slot
// early, so that the requests the page makes, which need slots of the
// same host, are not blocked by the page itself. fn may not be called:
// the engine then reports Fetch's result.
func WithReport(ctx context.Context, fn func(res *spider.Response, err error)) context.Context {
	return context.WithValue(ctx, reportKey{}, fn)
}

// Report returns the function WithReport put in ctx, or nil.
func Report(ctx context.Context) func(res *spider.Response, err error) {
	fn, _ := ctx.Value(reportKey{}).(func(*spider.Response, error))
	return fn
}
