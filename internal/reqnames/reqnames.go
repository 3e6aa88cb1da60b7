// Package reqnames gives this module's packages access to the names of the
// callbacks a spider.Request read back from storage (a JOBDIR queue, a
// shared Redis frontier) is to call. A request is stored with its callback
// and errback by method name; the names travel with the request, hidden
// from spider authors, until the engine resolves them on the spider.
//
// Package spider installs the accessors when it is initialised: this
// package cannot import spider (spider imports it), so the accessors take
// the request as a value of type any, always a *spider.Request. Use the
// typed wrappers of internal/callbacks rather than this package.
package reqnames

// Names are the method names of a restored request's callback and
// errback; "" is sp.Parse for Callback and no errback for Errback.
type Names struct {
	Callback, Errback string
}

var (
	get func(req any) Names
	set func(req any, n Names)
)

// Install sets the accessors; package spider calls it once from init.
func Install(g func(req any) Names, s func(req any, n Names)) { get, set = g, s }

// Get returns the names stored with req (a *spider.Request).
func Get(req any) Names { return get(req) }

// Set stores n with req (a *spider.Request).
func Set(req any, n Names) { set(req, n) }
