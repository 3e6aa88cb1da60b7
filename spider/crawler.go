package spider

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
)

// Crawler is what a running crawl exposes to spiders, middlewares, pipelines
// and extensions. Callbacks get it with CrawlerFrom(ctx); components get it
// when they are built.
type Crawler struct {
	// Spider is the spider being run.
	Spider Spider
	// Settings are the effective settings (read-only during the crawl).
	Settings *settings.Settings
	// Stats collects the crawl's counters.
	Stats *stats.Collector
	// Log is the crawl's logger.
	Log zerolog.Logger
	// Throttler lets callbacks slow a scope down on demand.
	Throttler ScopeDelayer
	// Download fetches req through throttling admission and the downloader
	// middlewares without going through the scheduler (robots.txt, inline
	// requests). It blocks until the scopes of req allow it. Once the crawl
	// is stopping it sends nothing and returns an error wrapping
	// ErrStopping.
	Download func(ctx context.Context, req *Request) (*Response, error)
}

// ErrStopping is the kind of the error of a request the crawl did not
// send, or cancelled, because it is stopping (Ctrl-C, a CLOSESPIDER_*
// limit): it was waiting (for a delay, a slot, robots.txt) when the stop
// came, or was still downloading SHUTDOWN_GRACE seconds after it. Such a
// request is not lost: its job stays queued, and a crawl with a job
// directory (JOBDIR) sends it when it resumes.
var ErrStopping = errors.New("not sent: the crawl is stopping")

// ScopeDelayer holds back every request of a throttling scope for at least
// d. The delay counts as a backoff trigger and is not capped by
// BACKOFF_MAX_DELAY. A spider uses it to react to soft blocks:
//
//	if strings.Contains(text, "under maintenance") {
//		spider.CrawlerFrom(ctx).Throttler.DelayScope(res.Request.Host(), 10*time.Minute)
//	}
type ScopeDelayer interface {
	DelayScope(scope string, d time.Duration)
}
