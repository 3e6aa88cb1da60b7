package throttling

import (
	"context"
	"time"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// metaDelayApplied marks a request whose throttling_delay was applied. It
// is stored in Meta (a JSON-friendly bool) so that copies made for
// retries and redirects, and requests restored from a disk queue, do not
// wait again.
const metaDelayApplied = "_throttling_delay_applied"

// TakeRequestDelay returns the throttling_delay of req the first time it
// is called for the request (and its copies), and 0 afterwards; it marks
// the request as delayed. The gate that holds requests (the engine-gated
// path, the throttling-aware scheduler) calls it when a request first
// reaches it and holds the request that long before admission, without a
// concurrency slot of the request's scopes. Invalid values (negative, not
// a number) count as no delay.
func TakeRequestDelay(req *spider.Request) time.Duration {
	v := req.Get(MetaDelay)
	if v == nil {
		return 0
	}
	if done, _ := req.Get(metaDelayApplied).(bool); done {
		return 0
	}
	req.Set(metaDelayApplied, true)
	f, err := settings.NonNegative(settings.Float).Convert(v)
	if err != nil {
		return 0
	}
	return settings.Duration(f.(float64))
}

// SetRequestDelay gives req a new throttling_delay of d, applied once even
// if an earlier delay of the request (or of the request it was copied from)
// was already applied. The redirect middleware uses it for a Retry-After or
// a Refresh delay on the new request.
func SetRequestDelay(req *spider.Request, d time.Duration) {
	req.Set(MetaDelay, d.Seconds())
	delete(req.Meta, metaDelayApplied)
}

type sentAtKey struct{}

// WithSentAt returns ctx carrying the time the request being fetched was
// admitted by the throttler. The engine sets it around the downloader
// middlewares, so a middleware can tell whether a request was admitted
// before a change of its scope's configuration (see middleware.RobotsTxt).
func WithSentAt(ctx context.Context, sentAt time.Time) context.Context {
	return context.WithValue(ctx, sentAtKey{}, sentAt)
}

// SentAtFrom returns the admission time set by WithSentAt.
func SentAtFrom(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(sentAtKey{}).(time.Time)
	return t, ok && !t.IsZero()
}

// Now returns the throttler's clock time (the crawl's clock), the time
// base of admission times.
func (t *Throttler) Now() time.Time { return t.clock.Now() }
