package dupefilter

import (
	"context"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
)

// StatFiltered counts the requests dropped as duplicates.
const StatFiltered = "dupefilter/filtered"

// Filter drops duplicate requests: it is what the scheduler asks before
// queueing a request.
type Filter struct {
	set   Set
	stats *stats.Collector
	log   zerolog.Logger
	debug bool
	// logged is set once the first duplicate has been logged.
	logged atomic.Bool
}

// NewFilter returns a Filter recording fingerprints in set. With debug
// (DUPEFILTER_DEBUG) every filtered request is logged at debug level;
// otherwise only the first one, at info level, with a hint about the
// setting. st may be nil; set may be nil for a Filter that only reports
// duplicates found elsewhere (Dropped).
func NewFilter(set Set, st *stats.Collector, log zerolog.Logger, debug bool) *Filter {
	return &Filter{set: set, stats: st, log: log, debug: debug}
}

// Seen reports whether req is a duplicate that must be dropped, recording
// its fingerprint otherwise. Requests with DontFilter are never dropped and
// their fingerprint is not recorded (as in Scrapy, a later request for the
// same resource without DontFilter is still sent once).
func (f *Filter) Seen(ctx context.Context, req *spider.Request) (bool, error) {
	if req.DontFilter {
		return false, nil
	}
	fp := Of(req)
	seen, err := f.set.Add(ctx, fp)
	if err != nil || !seen {
		return false, err
	}
	f.Dropped(req, fp)
	return true, nil
}

// Dropped counts and logs req as a filtered duplicate (as Seen does for
// the duplicates it finds). A scheduler whose queue checks fingerprints
// itself (pqueue.Deduplicator) reports the duplicates it hears of here.
func (f *Filter) Dropped(req *spider.Request, fp Fingerprint) {
	if f.stats != nil {
		f.stats.Inc(StatFiltered, 1)
	}
	switch {
	case f.debug:
		f.log.Debug().Str("url", req.URL.String()).Str("method", req.EffectiveMethod()).Str("fingerprint", fp.String()).Msg("filtered duplicate request")
	case f.logged.CompareAndSwap(false, true):
		f.log.Info().Str("url", req.URL.Redacted()).Str("method", req.EffectiveMethod()).
			Msg("filtered duplicate request; no more duplicates will be shown (see DUPEFILTER_DEBUG to show all duplicates)")
	}
}

// Forget takes back the fingerprint Seen recorded for req, when req could
// not be queued after all. It does nothing for DontFilter requests or sets
// that cannot forget.
func (f *Filter) Forget(ctx context.Context, req *spider.Request) error {
	if req.DontFilter || f.set == nil {
		return nil
	}
	if fg, ok := f.set.(Forgetter); ok {
		return fg.Forget(ctx, Of(req))
	}
	return nil
}

// Close closes the underlying set.
func (f *Filter) Close(ctx context.Context) error {
	if f.set == nil {
		return nil
	}
	return f.set.Close(ctx)
}
