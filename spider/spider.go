// Package spider is what users write crawls with: the Spider interface,
// Request and Response, callbacks and the Output they send items and new
// requests to.
//
// A spider is a struct with a name, a way to produce start requests and a
// Parse method:
//
//	type Quotes struct{ spider.Base }
//
//	func New() *Quotes {
//		return &Quotes{Base: spider.Base{StartURLs: []string{"https://quotes.toscrape.com/"}}}
//	}
//
//	func (*Quotes) Name() string { return "quotes" }
//
//	func (s *Quotes) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
//		doc, err := res.Doc()
//		if err != nil {
//			return err
//		}
//		doc.Find("div.quote").Each(func(_ int, q *goquery.Selection) {
//			out.Item(map[string]any{"text": q.Find("span.text").Text()})
//		})
//		out.FollowAll(res, doc.Find("li.next a"), s.Parse)
//		return nil
//	}
//
// The engine calls Start lazily: a spider with a million start URLs only
// materialises the ones the scheduler has room for.
//
// # Optional interfaces
//
// A spider changes how it is run by having more methods. The rule for
// where each interface lives: the general ones (settings, arguments, life
// cycle, allowed domains) are in this package; those that only one
// optional component reads live with that component, next to the settings
// they stand in for.
//
//   - SettingsProvider (Settings), ArgsReceiver (SetArgs), Opener (Open),
//     Closer (Close), AllowedDomainser (AllowedDomains): this package.
//   - middleware.BasicAuther (BasicAuth), middleware.HTTPStatusLister
//     (HandleHTTPStatusList), middleware.BanChecker (IsBanned): read by the
//     HttpAuth, HttpError/Redirect and ProxyPool/Sessions middlewares.
//   - render.PageActor (PageActions): read by the headless browser download
//     handler (package downloader/render).
//   - monitor.Provider (Monitors): checks of the crawl's items and stats
//     run with those of the MONITOR_* settings (package observe/monitor).
//
// Close(ctx) error is the signature of every component a crawl closes:
// spiders, item pipelines and downloader middlewares.
package spider

import (
	"context"
	"iter"

	"github.com/PuerkitoBio/goquery"
)

// Spider is a crawl: a name, start requests and the default callback.
type Spider interface {
	// Name identifies the spider on the command line and in job directories.
	Name() string
	// Start yields the start requests. It is consumed lazily; yield an error
	// (with a nil request) for a start URL that cannot be crawled and the
	// crawl logs it and goes on with the others.
	Start(ctx context.Context) iter.Seq2[*Request, error]
	// Parse is the callback for requests whose Callback is nil.
	Parse(ctx context.Context, res *Response, out Output) error
}

// Callback handles a response: it sends items and new requests to out.
// A returned error (or a panic) is logged with the URL, counted under
// spider_exceptions/count and towards CLOSESPIDER_ERRORCOUNT; the crawl
// goes on. Callback errors are not passed to the request's Errback, except
// a *middleware.DropError returned by a spider middleware.
type Callback func(ctx context.Context, res *Response, out Output) error

// Errback handles a request that did not reach its callback: a download
// error after the retry middleware gave up (err matches a downloader error
// kind such as errkind.DownloadTimeout), or a request or response
// dropped on purpose by a middleware (a *middleware.DropError: robots.txt,
// offsite, HTTP error status). Errors returned by the callback itself are
// not passed to the errback. Like a callback, an errback may emit items and
// new requests (a fallback URL, say).
type Errback func(ctx context.Context, req *Request, err error, out Output) error

// Output receives what a callback produces. Implementations are safe for
// concurrent use.
type Output interface {
	// Item sends an item (any struct or map) to the item pipelines.
	Item(item any)
	// Request schedules a new request. A nil request is ignored.
	Request(req *Request)
	// Follow schedules a request for ref (an href, relative or absolute)
	// resolved against res's URL; an invalid link is logged and counted,
	// never fatal. It is Request(res.NewRequest(ref, cb)) with the error
	// reported.
	Follow(res *Response, ref string, cb Callback)
	// FollowAll follows, as Follow does, the link of every element of sel:
	// its href attribute or, without one, its src (see Hrefs).
	FollowAll(res *Response, sel *goquery.Selection, cb Callback)
}

// SettingsProvider is implemented by spiders that set their own settings.
// They take precedence over the settings file and defaults, and are
// overridden by environment variables and -s options.
type SettingsProvider interface {
	Settings() map[string]any
}

// ArgsReceiver is implemented by spiders that take arguments from the
// command line (-a NAME=VALUE). SetArgs is called once before the crawl;
// an error stops the crawl with exit status 2 and the message shown.
type ArgsReceiver interface {
	SetArgs(args map[string]string) error
}

// Opener is implemented by spiders that need the crawler before the crawl
// starts (to read settings, keep the throttler, open files).
type Opener interface {
	Open(ctx context.Context, c *Crawler) error
}

// Closer is implemented by spiders that clean up when the crawl ends.
// CloseReason(ctx) says why it ended ("finished", "shutdown",
// "closespider_timeout", ...). Close(ctx) error is the one signature of
// every component that is closed at the end of a crawl: spiders, item
// pipelines (pipeline.Closer) and downloader middlewares
// (middleware.Closer). Storage handles (a session store, the HTTP cache's
// store, a job directory) are io.Closers, closed by what opened them.
type Closer interface {
	Close(ctx context.Context) error
}

// AllowedDomainser is implemented by spiders that restrict the crawl to
// some domains (subdomains included); Base implements it.
type AllowedDomainser interface {
	AllowedDomains() []string
}

// Base is embedded by spiders to get start requests from StartURLs, allowed
// domains and custom settings without writing methods for them.
type Base struct {
	// StartURLs are requested first, with the spider's Parse as callback.
	StartURLs []string
	// Domains lists the domains the spider may crawl (subdomains included);
	// empty means any. Used by the offsite middleware.
	Domains []string
	// CustomSettings override the settings file for this spider.
	CustomSettings map[string]any
}

// Start yields a request for each of StartURLs.
func (b *Base) Start(ctx context.Context) iter.Seq2[*Request, error] {
	return func(yield func(*Request, error) bool) {
		for _, u := range b.StartURLs {
			if ctx.Err() != nil {
				return
			}
			r, err := NewRequest(u, nil)
			if !yield(r, err) {
				return
			}
		}
	}
}

// AllowedDomains returns Domains.
func (b *Base) AllowedDomains() []string { return b.Domains }

// Settings returns CustomSettings.
func (b *Base) Settings() map[string]any { return b.CustomSettings }
