package pqueue

import (
	"fmt"
	"time"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// notBefore reads the throttling_delay meta of req (seconds, a number or
// a numeric string): the time before which it must not compete, or the
// zero time for none. A negative or non-numeric value is an error naming
// the request.
func notBefore(now time.Time, req *spider.Request) (time.Time, error) {
	v := req.Get(throttling.MetaDelay)
	if v == nil {
		return time.Time{}, nil
	}
	f, err := settings.Float.Convert(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("request %s: meta %s: %v", req, throttling.MetaDelay, err)
	}
	secs := f.(float64)
	if secs < 0 {
		return time.Time{}, fmt.Errorf("request %s: meta %s: %v is negative", req, throttling.MetaDelay, secs)
	}
	if secs == 0 {
		return time.Time{}, nil
	}
	return now.Add(settings.Duration(secs)), nil
}

// clearDelay removes the throttling_delay meta of a request about to be
// sent: the delay holds a request once, before its first send, and must
// not hold its retries again.
func clearDelay(req *spider.Request) {
	if req.Meta != nil {
		delete(req.Meta, throttling.MetaDelay)
	}
}
