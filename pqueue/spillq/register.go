package spillq

import (
	"fmt"

	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/scheduler"
)

// Importing this package registers the spilling queue as the scheduler's
// storage (scheduler.SpillStorage) of a crawl without a job, whenever
// SCHEDULER_MEMORY_MAX_REQUESTS is positive.
func init() {
	scheduler.RegisterStorage(scheduler.SpillStorage, openStorage)
}

// openStorage is the scheduler.StorageFactory of the package: a Store that
// keeps at most SCHEDULER_MEMORY_MAX_REQUESTS requests in memory and
// spills the rest to a temporary folder in SCHEDULER_SPILL_DIR, or nil
// (memory only) when the limit is 0. Nothing is created on disk unless
// the queue grows past the limit.
func openStorage(d scheduler.Deps) (*scheduler.Storage, error) {
	limit := d.Settings.Int("SCHEDULER_MEMORY_MAX_REQUESTS")
	if limit <= 0 {
		return nil, nil
	}
	q, err := New(Options{
		Limit: limit,
		Dir:   d.Settings.String("SCHEDULER_SPILL_DIR"),
		Codec: reqcodec.Codec{Spider: d.Spider},
		Log:   d.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("SCHEDULER_MEMORY_MAX_REQUESTS: %w", err)
	}
	return &scheduler.Storage{Queue: q}, nil
}
