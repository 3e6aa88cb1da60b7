// Package spillq is the frontier of a crawl without JOBDIR whose queue
// grows past what memory should hold: a pqueue.Store that keeps up to a
// limit of queued requests in memory (a pqueue.MemoryStore) and spills the
// rest to a temporary Pebble database (a pebbleq.Store), which it deletes
// when it is closed.
//
// The order in which requests come out is exactly the memory store's: per
// sub-queue, higher priority first, then push order. The store hands out
// one sequence of IDs for both parts, so a sub-queue's best entry is the
// better of its memory head and its disk head compared by (priority, ID),
// wherever each entry was put and whatever was nacked back. Which part a
// push goes to only decides what memory holds:
//
//   - Below the limit, with nothing waiting on disk, pushes stay in memory
//     and the disk is never created: a crawl whose frontier stays small
//     pays nothing.
//   - Once the entries waiting in memory (delayed ones included) reach the
//     limit, pushes go to disk, and keep going there until the disk part
//     has drained, so that memory refills only when the spilled requests
//     have been served. The first spill opens the database and logs it at
//     INFO (where, and how many requests are queued).
//   - A request the codec cannot encode (a closure callback: the codec
//     refuses it with spider.ErrNotMethod, or a meta value that is not a
//     JSON value) stays in memory: spilling never fails a crawl that would
//     run in memory. The delayed set (throttling_delay) stays in memory
//     too.
//
// Nothing on disk is resumable: writes are grouped (pebbleq's GroupWrites,
// committed at the engine's Flush once per turn of its loop), never synced,
// and the write-ahead log is off. A write that fails (a full disk) fails
// with pqueue.ErrStorage and the engine stops the crawl with it; no request
// is silently lost.
//
// Importing the package registers the store as the scheduler's spill
// storage (scheduler.SpillStorage): a crawl without JOBDIR or REDIS_URL
// then uses it whenever SCHEDULER_MEMORY_MAX_REQUESTS is positive. The
// gocrawl command and every cli.Main program import it; a program that
// runs the engine itself adds
//
//	import _ "github.com/gocrawl/gocrawl/pqueue/spillq"
package spillq
