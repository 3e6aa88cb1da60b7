package throttling

import (
	"context"
	"fmt"
	"time"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// metaDelayApplied marks a request whose throttling_delay was applied. It
// is stored in Meta (a JSON-friendly bool), so the mark travels with the
// request: through copies (Request.Clone: retries, redirects, a request
// re-yielded from a callback), through the request codec of JOBDIR and
// Redis records, and so through a restart.
const metaDelayApplied = "_throttling_delay_applied"

// The rule for throttling_delay, the same at every gate (the engine-gated
// path, Crawler.Download, and the queues: memory, Pebble, Redis): "the
// delay is applied once, the first time the request reaches the
// throttling gate" (Scrapy's throttling design, PR #6931).
//
//   - PendingRequestDelay is the delay a request still has to wait: its
//     throttling_delay, or 0 once the request is marked;
//   - whoever holds the request for that delay marks it
//     (MarkRequestDelayTaken; TakeRequestDelay does both);
//   - a copy carries the mark, as its meta is copied: a retry, a redirect
//     or a request re-yielded from its callback does not wait again;
//   - SetRequestDelay gives a request a new delay, applied once more (the
//     redirect middleware's Retry-After). Setting the throttling_delay meta
//     of a marked copy directly does not: use SetRequestDelay.

// PendingRequestDelay returns the throttling_delay req still has to wait:
// its meta (seconds, a number or a numeric string), or 0 when there is
// none or it was already applied (to req or to the request it was copied
// from). A negative or non-numeric value is an error naming the request.
func PendingRequestDelay(req *spider.Request) (time.Duration, error) {
	v := req.Get(MetaDelay)
	if v == nil || DelayTaken(req) {
		return 0, nil
	}
	f, err := settings.Float.Convert(v)
	if err != nil {
		return 0, fmt.Errorf("request %s: meta %s: %v", req, MetaDelay, err)
	}
	secs := f.(float64)
	if secs < 0 {
		return 0, fmt.Errorf("request %s: meta %s: %v is negative", req, MetaDelay, secs)
	}
	return settings.Duration(secs), nil
}

// DelayTaken reports whether req carries the mark of an applied
// throttling_delay.
func DelayTaken(req *spider.Request) bool {
	done, _ := req.Get(metaDelayApplied).(bool)
	return done
}

// MarkRequestDelayTaken marks req's throttling_delay as applied, so that no
// gate holds it (or a copy of it) again. A request without the meta is
// left unchanged.
func MarkRequestDelayTaken(req *spider.Request) {
	if req.Get(MetaDelay) != nil && !DelayTaken(req) {
		req.Set(metaDelayApplied, true)
	}
}

// TakeRequestDelay returns the throttling_delay of req the first time it
// is called for the request (and its copies), and 0 afterwards; it marks
// the request as delayed. The gates that hold requests themselves (the
// engine-gated path, Crawler.Download) call it when a request first
// reaches them and hold the request that long before admission, without a
// concurrency slot of the request's scopes. Invalid values (negative, not
// a number) count as no delay: the queues refuse them at push.
func TakeRequestDelay(req *spider.Request) time.Duration {
	d, err := PendingRequestDelay(req)
	MarkRequestDelayTaken(req)
	if err != nil {
		return 0
	}
	return d
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
