package scheduler

import (
	"fmt"

	"github.com/gocrawl/gocrawl/internal/registry"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
)

// Storage is where a scheduler keeps its pending requests and the
// fingerprints of the requests it has seen. Without a job both live in
// memory, the queue spilling to disk past SCHEDULER_MEMORY_MAX_REQUESTS
// when package spillq is linked (it registers SpillStorage with
// RegisterStorage). A job's storage (JOBDIR, REDIS_URL) is handed in as
// Deps.Storage by the engine.
type Storage struct {
	// Queue keeps the queued requests.
	Queue pqueue.Store
	// Seen keeps the fingerprints of requests already queued.
	Seen dupefilter.Set
	// Frontier, when set, is the priority queue itself, used instead of
	// the SCHEDULER_PRIORITY_QUEUE built over Queue: a queue that decides
	// in shared storage which request goes next (the Redis frontier of a
	// distributed crawl, whose selection runs inside Redis). Queue is then
	// unused, and so is Seen if the frontier is a pqueue.Deduplicator.
	Frontier pqueue.PriorityQueue
}

// StorageFactory opens persistent storage for a crawl from its settings
// (d.Settings, d.Spider for callbacks by name). It returns nil and no error
// when it does not apply, for example when JOBDIR is empty, so that several
// backends can be registered side by side.
type StorageFactory func(d Deps) (*Storage, error)

var storages registry.Registry[StorageFactory]

// RegisterStorage makes a storage backend available to schedulers. At
// construction a scheduler asks every registered backend, in name order,
// and uses the first that applies; if none does it keeps everything in
// memory.
func RegisterStorage(name string, f StorageFactory) {
	storages.Register(name, f)
}

// openStorage returns d.Storage, the first registered backend that
// applies, or memory storage.
func openStorage(d Deps) (*Storage, error) {
	st := &Storage{}
	if d.Storage != nil {
		*st = *d.Storage
	} else {
		for _, name := range storages.Names() {
			f, ok := storages.Lookup(name)
			if !ok {
				continue
			}
			s, err := f(d)
			if err != nil {
				return nil, fmt.Errorf("scheduler storage %s: %w", name, err)
			}
			if s != nil {
				*st = *s
				break
			}
		}
		if st.Queue == nil && st.Frontier == nil {
			if err := checkSpill(d); err != nil {
				return nil, err
			}
		}
	}
	if st.Frontier != nil {
		return st, nil
	}
	if st.Queue == nil {
		st.Queue = pqueue.NewMemoryStore()
	}
	if st.Seen == nil {
		st.Seen = dupefilter.NewMemorySet()
	}
	return st, nil
}
