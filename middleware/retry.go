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
//
// Refusals are not failures. A 429 or 503 that carries Retry-After is the
// host's rate limit speaking: the page is fine, the host asks to be asked
// later, and the throttler already holds the host's scope until then. Such
// a refusal is rescheduled without spending the page's RETRY_TIMES and
// without lowering its priority; it counts against RETRY_REFUSED_TIMES
// (the retry_refusals meta), a separate cap so that a host that refuses
// forever still ends. Stats: retry/refused_count,
// retry/refused_max_reached. See docs/throttling.md, "Retries and
// refusals".
type Retry struct {
	times          int
	refusedTimes   int
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
		refusedTimes:   s.Int("RETRY_REFUSED_TIMES"),
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
		if r.codes[res.Status] && isRefusal(res) {
			if nr := r.retryRefused(req, statusReason(res.Status)); nr != nil {
				return nil, &RescheduleError{Requests: []*spider.Request{nr}, Reason: "retry"}
			}
			return res, nil
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

// isRefusal reports whether res is a host's refusal by rate limit rather
// than a failure: a 429 or 503 with a Retry-After header.
func isRefusal(res *spider.Response) bool {
	if res.Status != http.StatusTooManyRequests && res.Status != http.StatusServiceUnavailable {
		return false
	}
	return res.Header != nil && res.Header.Get("Retry-After") != ""
}

// retryRefused returns a copy of req to schedule after a refusal (its
// retry_refusals meta incremented, its retry_times and priority kept), or
// nil when req has been refused RETRY_REFUSED_TIMES times already.
func (r *Retry) retryRefused(req *spider.Request, reason string) *spider.Request {
	n, _ := metaInt(req, MetaRetryRefusals)
	n++
	if n > r.refusedTimes {
		if r.stats != nil {
			r.stats.Inc("retry/refused_max_reached", 1)
		}
		r.log.Debug().Str("request", RedactedRequest(req)).Int("refusals", n-1).Str("reason", reason).
			Msg("gave up after the host's refusals")
		return nil
	}
	nr := req.Clone()
	nr.Set(MetaRetryRefusals, n)
	clearCopyMeta(nr)
	nr.DontFilter = true
	if r.stats != nil {
		r.stats.Inc("retry/refused_count", 1)
		r.stats.Inc("retry/reason_count/"+reason, 1)
	}
	r.log.Debug().Str("request", RedactedRequest(req)).Int("refusal", n).Int("max", r.refusedTimes).Str("reason", reason).
		Msg("refused by the host's rate limit; rescheduled")
	return nr
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
