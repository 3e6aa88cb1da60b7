package pqueue

import (
	"time"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// notBefore is the time before which req must not compete: now plus the
// throttling_delay it still has to wait (throttling.PendingRequestDelay:
// none once the delay was applied, to it or to the request it was copied
// from), or the zero time for none. A negative or non-numeric value is an
// error naming the request.
func notBefore(now time.Time, req *spider.Request) (time.Time, error) {
	d, err := throttling.PendingRequestDelay(req)
	if err != nil || d <= 0 {
		return time.Time{}, err
	}
	return now.Add(d), nil
}

// delayTaken marks the throttling_delay of a request about to be sent as
// applied: the delay holds a request once, before its first send, and
// must not hold it (at the engine's gate), its retries or its copies
// again.
func delayTaken(req *spider.Request) { throttling.MarkRequestDelayTaken(req) }
