package jobdir

import (
	"context"
	"fmt"

	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
)

// QueueCounts returns how many requests j's queue holds per scope set
// (scope names joined by "\x00", as the throttling-aware queue keys its
// sub-queues) and how many are delayed by a throttling_delay. It reads the
// queue without changing it, so it works on a job opened read-only.
func QueueCounts(j *Job) (counts map[string]int, delayed int, err error) {
	q, err := pebbleq.New(j.DB(), pebbleq.Options{Codec: reqcodec.Codec{}, Prefix: PrefixQueue})
	if err != nil {
		return nil, 0, err
	}
	if err := q.Open(context.Background()); err != nil {
		return nil, 0, fmt.Errorf("reading the queue: %w", err)
	}
	counts, delayed = q.Counts()
	return counts, delayed, nil
}
