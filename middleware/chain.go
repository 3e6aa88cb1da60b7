package middleware

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gocrawl/gocrawl/internal/registry"

	"github.com/gocrawl/gocrawl/spider"
)

// DownloaderFactory builds a downloader middleware for a crawl. It may
// return (nil, nil) to stay out of the chain (for example when its
// *_ENABLED setting is false).
type DownloaderFactory func(c *spider.Crawler) (Downloader, error)

// SpiderFactory builds a spider middleware for a crawl; (nil, nil) stays
// out of the chain.
type SpiderFactory func(c *spider.Crawler) (Spider, error)

var (
	downloaders registry.Registry[DownloaderFactory]
	spiders     registry.Registry[SpiderFactory]
)

// RegisterDownloader makes a downloader middleware available by name to
// DOWNLOADER_MIDDLEWARES.
func RegisterDownloader(name string, f DownloaderFactory) {
	downloaders.Register(name, f)
}

// RegisterSpider makes a spider middleware available by name to
// SPIDER_MIDDLEWARES.
func RegisterSpider(name string, f SpiderFactory) {
	spiders.Register(name, f)
}

// DownloaderChain is a built downloader middleware chain: the fetcher the
// engine calls, plus what the engine needs to know about the middlewares in
// it (which ones can answer offline, which ones hold resources).
type DownloaderChain struct {
	fetch     Fetcher
	names     []string
	answerers []namedAnswerer
	closers   []namedCloser
	observers []StartObserver
	c         *spider.Crawler
}

type namedAnswerer struct {
	name string
	a    Answerer
}

type namedCloser struct {
	name string
	c    Closer
}

// NewDownloaderChain builds the downloader middlewares enabled by
// DOWNLOADER_MIDDLEWARES (merged over DOWNLOADER_MIDDLEWARES_BASE) around
// inner, the real download: the lowest order sees the request first and the
// response last. Invalid entries and middlewares that fail to build give an
// error naming the entry. Call Close when the crawl ends.
func NewDownloaderChain(c *spider.Crawler, inner Fetcher) (*DownloaderChain, error) {
	entries, err := registry.Ordered(c.Settings, "DOWNLOADER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES_BASE",
		downloaders.Has)
	if err != nil {
		return nil, err
	}
	ch := &DownloaderChain{c: c}
	guards := &guardChain{}
	f := inner
	for i := len(entries) - 1; i >= 0; i-- {
		name := entries[i].Name
		build, _ := downloaders.Lookup(name)
		m, err := build(c)
		if err != nil {
			_ = ch.Close(context.Background())
			return nil, fmt.Errorf("DOWNLOADER_MIDDLEWARES: %s: %w", name, err)
		}
		if m == nil {
			continue
		}
		if _, old := m.(interface{ Close() error }); old {
			_ = ch.Close(context.Background())
			return nil, fmt.Errorf("DOWNLOADER_MIDDLEWARES: %s: its Close method must be Close(ctx context.Context) error (middleware.Closer), not Close() error", name)
		}
		f = guardFetcher(name, m, f, c, guards)
		ch.names = append([]string{name}, ch.names...)
		if a, ok := m.(Answerer); ok {
			ch.answerers = append(ch.answerers, namedAnswerer{name, a})
		}
		if cl, ok := m.(Closer); ok {
			ch.closers = append(ch.closers, namedCloser{name, cl})
		}
		if o, ok := m.(StartObserver); ok {
			ch.observers = append(ch.observers, o)
		}
	}
	ch.fetch = f
	return ch, nil
}

// Fetch runs req through the chain.
func (ch *DownloaderChain) Fetch(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	return ch.fetch.Fetch(ctx, req)
}

// ObserveStart tells the middlewares that implement StartObserver about the
// crawl's first start request. The engine calls it once, before anything
// is fetched.
func (ch *DownloaderChain) ObserveStart(req *spider.Request) {
	for _, o := range ch.observers {
		o.ObserveStart(req)
	}
}

// Names returns the enabled middlewares, outermost first.
func (ch *DownloaderChain) Names() []string { return slices.Clone(ch.names) }

// AnswerOffline reports whether a middleware of the chain promises to
// answer req without sending it (a fresh HTTP cache entry) and, if so,
// marks req with MetaOffline. The engine calls it before assigning
// throttling scopes. A request whose MetaOffline is already false is never
// answered offline. A panicking Answerer counts as "no".
func (ch *DownloaderChain) AnswerOffline(ctx context.Context, req *spider.Request) bool {
	if v, ok := req.Get(MetaOffline).(bool); ok && !v {
		return false
	}
	for _, a := range ch.answerers {
		if ch.willAnswer(ctx, a, req) {
			req.Set(MetaOffline, true)
			return true
		}
	}
	return false
}

func (ch *DownloaderChain) willAnswer(ctx context.Context, a namedAnswerer, req *spider.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if ch.c != nil {
				if ch.c.Stats != nil {
					ch.c.Stats.Inc("middleware/panic_count/"+a.name, 1)
				}
				ch.c.Log.Error().Str("middleware", a.name).Str("request", RedactedRequest(req)).
					Interface("panic", v).Msg("middleware panicked in WillAnswer; sending the request")
			}
		}
	}()
	return a.a.WillAnswer(ctx, req)
}

// Close closes the middlewares that hold resources, in the chain's order.
func (ch *DownloaderChain) Close(ctx context.Context) error {
	var errs []error
	for _, c := range ch.closers {
		if err := c.c.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing downloader middleware %s: %w", c.name, err))
		}
	}
	ch.closers = nil
	return errors.Join(errs...)
}

// OfflineMiss is called by the innermost fetcher, just before a request
// would reach the network. For a request marked MetaOffline (it skipped
// throttling on a middleware's promise to answer it) it returns the
// *RescheduleError that sends a copy back through the scheduler and
// throttling instead; otherwise nil.
func OfflineMiss(req *spider.Request) *RescheduleError {
	if v, _ := req.Get(MetaOffline).(bool); !v {
		return nil
	}
	nr := req.Clone()
	nr.Set(MetaOffline, false)
	nr.DontFilter = true
	return &RescheduleError{Requests: []*spider.Request{nr}, Reason: "offline_miss"}
}

// BuildDownloader is NewDownloaderChain for callers that only need the
// fetcher and the enabled names. Middlewares holding resources are not
// closed; prefer NewDownloaderChain.
func BuildDownloader(c *spider.Crawler, inner Fetcher) (Fetcher, []string, error) {
	ch, err := NewDownloaderChain(c, inner)
	if err != nil {
		return nil, nil, err
	}
	return ch, ch.names, nil
}

// BuildSpider returns the handler that runs the spider middlewares enabled
// by SPIDER_MIDDLEWARES (merged over SPIDER_MIDDLEWARES_BASE) around inner
// (the callback), lowest order outermost: it sees the response first and
// the callback's output and error last.
func BuildSpider(c *spider.Crawler, inner Handler) (Handler, []string, error) {
	entries, err := registry.Ordered(c.Settings, "SPIDER_MIDDLEWARES", "SPIDER_MIDDLEWARES_BASE",
		spiders.Has)
	if err != nil {
		return nil, nil, err
	}
	h := inner
	guards := &guardChain{}
	var names []string
	for i := len(entries) - 1; i >= 0; i-- {
		build, _ := spiders.Lookup(entries[i].Name)
		m, err := build(c)
		if err != nil {
			return nil, nil, fmt.Errorf("SPIDER_MIDDLEWARES: %s: %w", entries[i].Name, err)
		}
		if m == nil {
			continue
		}
		h = guardHandler(entries[i].Name, m, h, c, guards)
		names = append([]string{entries[i].Name}, names...)
	}
	return h, names, nil
}
