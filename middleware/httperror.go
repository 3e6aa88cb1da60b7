package middleware

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterSpider("HttpError", newHTTPError) }

// StatusError is the error for a response whose status the callback does
// not handle. It reaches the request's errback wrapped in a *DropError with
// reason "httperror"; get the response with errors.As:
//
//	func (s *MySpider) OnError(ctx context.Context, req *spider.Request, err error, out spider.Output) error {
//		var he *middleware.StatusError
//		if errors.As(err, &he) && he.Response.Status == 404 {
//			out.Item(map[string]any{"missing": req.URL.String()})
//		}
//		return nil
//	}
type StatusError struct {
	Response *spider.Response
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("ignoring response <%d %s>: HTTP status code is not handled or not allowed",
		e.Response.Status, RedactedURL(e.Response.URL))
}

// HTTPError (the "HttpError" spider middleware) keeps responses with a status outside 200-299 away from
// callbacks, unless HTTPERROR_ALLOW_ALL is set, the status is in
// HTTPERROR_ALLOWED_CODES or in the request's handle_httpstatus_list meta
// or the spider's HandleHTTPStatusList, or the request has
// handle_httpstatus_all meta. Stats: httperror/response_ignored_count and
// httperror/response_ignored_status_count/<status>.
type HTTPError struct {
	allowAll bool
	allowed  map[int]bool
	sp       spider.Spider
	stats    *stats.Collector
	log      zerolog.Logger
}

func newHTTPError(c *spider.Crawler) (Spider, error) {
	m := &HTTPError{allowAll: c.Settings.Bool("HTTPERROR_ALLOW_ALL"), allowed: map[int]bool{},
		sp: c.Spider, stats: c.Stats, log: c.Log}
	for _, code := range c.Settings.Ints("HTTPERROR_ALLOWED_CODES") {
		m.allowed[code] = true
	}
	return m, nil
}

// WrapHandler implements Spider.
func (m *HTTPError) WrapHandler(next Handler) Handler {
	return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		if res.Status >= 200 && res.Status < 300 || m.allowAll || m.allowed[res.Status] ||
			(res.Request != nil && handlesStatus(m.sp, res.Request, res.Status)) {
			return next.Handle(ctx, res, out)
		}
		if m.stats != nil {
			m.stats.Inc("httperror/response_ignored_count", 1)
			m.stats.Inc("httperror/response_ignored_status_count/"+strconv.Itoa(res.Status), 1)
		}
		he := &StatusError{Response: res}
		m.log.Debug().Int("status", res.Status).Str("url", RedactedURL(res.URL)).Msg("ignoring response: HTTP status code is not handled or not allowed")
		return &DropError{Reason: "httperror", Err: he}
	})
}
