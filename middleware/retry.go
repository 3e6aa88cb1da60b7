package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterDownloader("Retry", newRetry) }

// Retry retries downloads that failed with a RETRY_EXCEPTIONS error kind
// and responses with a RETRY_HTTP_CODES status, up to RETRY_TIMES times
// (the max_retry_times meta overrides it; dont_retry opts out).
//
// A retry is a new request, not a loop: Retry answers with a
// *RescheduleError carrying a copy of the request with retry_times
// incremented, DontFilter set and its priority lowered by
// RETRY_PRIORITY_ADJUST. The engine enqueues it, so it goes back through the
// scheduler, the start-rate limit and the throttling gate: a scope that is
// backing off (the 503 that caused the retry made it back off) delays its
// retries too, and a retry storm can never bypass admission.
//
// When the retries are used up, the last error reaches the request's
// errback, or the last response is passed on (HttpError then turns a 5xx
// into an error for the errback). Stats: retry/count,
// retry/reason_count/<reason>, retry/max_reached.
type Retry struct {
	times          int
	codes          map[int]bool
	kinds          []error
	priorityAdjust int
	stats          *stats.Collector
	log            zerolog.Logger
}

func newRetry(c *spider.Crawler) (Downloader, error) {
	s := c.Settings
	if !s.Bool("RETRY_ENABLED") {
		return nil, nil
	}
	kinds, err := errkind.Resolve("RETRY_EXCEPTIONS", s.Strings("RETRY_EXCEPTIONS"))
	if err != nil {
		return nil, err
	}
	r := &Retry{
		times:          s.Int("RETRY_TIMES"),
		codes:          map[int]bool{},
		kinds:          kinds,
		priorityAdjust: s.Int("RETRY_PRIORITY_ADJUST"),
		stats:          c.Stats,
		log:            c.Log,
	}
	if err := checkRetryCodes(s); err != nil {
		return nil, err
	}
	for _, code := range s.Ints("RETRY_HTTP_CODES") {
		r.codes[code] = true
	}
	return r, nil
}

// checkRetryCodes checks RETRY_HTTP_CODES.
func checkRetryCodes(s *settings.Settings) error {
	for _, code := range s.Ints("RETRY_HTTP_CODES") {
		if code < 100 || code > 999 {
			return fmt.Errorf("RETRY_HTTP_CODES: %d is not an HTTP status code", code)
		}
	}
	return nil
}

// WrapFetcher implements Downloader.
func (r *Retry) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		res, err := next.Fetch(ctx, req)
		if metaBool(req, MetaDontRetry) {
			return res, err
		}
		if err != nil {
			if ctx.Err() != nil || !r.retryable(err) {
				return nil, err
			}
			if nr := r.retry(req, reasonOfError(err)); nr != nil {
				return nil, &RescheduleError{Requests: []*spider.Request{nr}, Reason: "retry"}
			}
			return nil, err
		}
		if r.codes[res.Status] {
			if nr := r.retry(req, statusReason(res.Status)); nr != nil {
				return nil, &RescheduleError{Requests: []*spider.Request{nr}, Reason: "retry"}
			}
		}
		return res, nil
	})
}

func (r *Retry) retryable(err error) bool {
	if intentional(err) {
		return false
	}
	for _, k := range r.kinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

func (r *Retry) retry(req *spider.Request, reason string) *spider.Request {
	max := r.times
	if n, ok := metaInt(req, MetaMaxRetryTimes); ok {
		max = n
	}
	return RetryRequest(req, reason, max, r.priorityAdjust, r.stats, r.log)
}

// RetryRequest returns a copy of req to schedule as a retry, or nil when
// req has already been retried maxRetries times. It is what the Retry
// middleware does, exported for callbacks that detect a failure the
// middleware cannot see (a soft block served as 200):
//
//	if strings.Contains(text, "try again later") {
//		c := spider.CrawlerFrom(ctx)
//		if r := middleware.RetryRequest(res.Request, "soft block", 3, -1, c.Stats, c.Log); r != nil {
//			out.Request(r)
//		}
//		return nil
//	}
//
// The copy has retry_times incremented, DontFilter set, priority adjusted
// by priorityAdjust and any offline mark removed; its custom throttling
// scopes are kept. reason names the failure in the stats
// (retry/reason_count/<reason>); st may be nil.
func RetryRequest(req *spider.Request, reason string, maxRetries, priorityAdjust int, st *stats.Collector, log zerolog.Logger) *spider.Request {
	n, _ := metaInt(req, spider.MetaRetryTimes)
	n++
	if n > maxRetries {
		if st != nil {
			st.Inc("retry/max_reached", 1)
		}
		log.Debug().Str("request", RedactedRequest(req)).Int("retries", n-1).Str("reason", reason).
			Msg("gave up retrying")
		return nil
	}
	nr := req.Clone()
	nr.Set(spider.MetaRetryTimes, n)
	clearCopyMeta(nr)
	nr.DontFilter = true
	nr.Priority = req.Priority + priorityAdjust
	if st != nil {
		st.Inc("retry/count", 1)
		st.Inc("retry/reason_count/"+reason, 1)
	}
	log.Debug().Str("request", RedactedRequest(req)).Int("retry", n).Int("max", maxRetries).Str("reason", reason).
		Msg("retrying")
	return nr
}

// reasonOfError names a download error by its kind ("DownloadTimeoutError").
func reasonOfError(err error) string {
	if k := errkind.Of(err); k != "" {
		return k
	}
	return "other"
}

// statusReason is "503 Service Unavailable", as Scrapy names status reasons.
func statusReason(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code) + " Unknown Status"
}
