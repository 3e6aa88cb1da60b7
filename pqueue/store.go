// Package pqueue holds the crawl frontier: priority queues of requests
// waiting to be sent, and the storage they are kept in.
//
// Two layers, so that storage is written once per backend and scheduling
// once for all backends:
//
//   - A Store keeps entries grouped in named sub-queues, each ordered by
//     priority (highest first) then push order, plus a delayed set ordered by
//     not-before time. It persists them (pebbleq, in the job directory)
//     or keeps them in memory (MemoryStore). Entries leave a Store only
//     when acknowledged: Reserve takes the best entry of a sub-queue out
//     of line, Ack forgets it, Nack puts it back, and a persistent store
//     puts unacknowledged reservations back in line when it is reopened.
//   - A PriorityQueue decides which entry comes out next. The plain
//     PriorityQueue ("PriorityQueue") yields entries in priority order and
//     leaves throttling to the engine; the ThrottlingAwarePriorityQueue keeps
//     an in-memory index of sub-queue heads and scope states and yields only
//     requests whose every throttling scope can send now.
//
// Nothing crosses the Store interface by pointer identity: entries are
// named by ID values assigned by the store, so a store shared between
// processes fits the same interface.
package pqueue

import (
	"context"
	"errors"
	"time"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// ID names one entry of a Store. A store assigns IDs in push order (a
// smaller ID was pushed earlier), which is what "first in, first out" means
// among entries of equal priority. IDs are never reused by a store.
type ID uint64

// Info is what a queue needs to know about an entry to order and schedule
// it, without the request itself.
type Info struct {
	// ID is assigned by Store.Push.
	ID ID
	// Queue names the sub-queue the entry belongs to. The throttling-aware
	// queue uses the key of the request's scopes (throttling.Scopes.Key), so
	// that requests sharing every throttling decision share a sub-queue; the
	// plain queue puts everything in "".
	Queue string
	// Priority is the effective priority (the request's, adjusted by
	// DEPTH_PRIORITY): higher is served first.
	Priority int
	// Scopes are the request's throttling scopes with the quota amount it
	// is expected to consume in each.
	Scopes throttling.Scopes
	// NotBefore, when not zero, keeps the entry in the store's delayed set
	// until that time (the throttling_delay request meta). Entries returned
	// by Head and Reserve have a zero NotBefore.
	NotBefore time.Time
}

// Entry is a queued request with its Info.
type Entry struct {
	Info
	// Req is the request. A persistent store encodes it with a Codec and
	// returns a decoded copy; the memory store keeps the pointer, or a
	// compact copy of a found link (see MemoryStore), and returns an
	// equal request made from it.
	Req *spider.Request
}

// Errors reported by stores. Test them with errors.Is: implementations
// wrap them with details.
var (
	// ErrEmpty is returned by Reserve for a sub-queue without entries.
	ErrEmpty = errors.New("pqueue: sub-queue is empty")
	// ErrUnknownID is returned by Ack and Nack for an ID that is not
	// reserved (never pushed, already acknowledged, or not reserved).
	ErrUnknownID = errors.New("pqueue: no reserved entry with this ID")
	// ErrClosed is returned by stores and queues used after Close.
	ErrClosed = errors.New("pqueue: closed")
	// ErrStorage is the kind of a failure of a store's storage (a disk
	// write error, a full disk): the store cannot go on, and the engine
	// stops the crawl with the error instead of losing requests.
	ErrStorage = errors.New("pqueue: storage failed")
)

// Store keeps queued entries, ordered within each sub-queue and persisted
// by the implementation. It is storage only: deciding which sub-queue to
// serve is the PriorityQueue's job, so a Store needs no knowledge of
// throttling.
//
// Ordering within a sub-queue is: higher Priority first, then smaller ID
// (push order). The delayed set is ordered by NotBefore, then ID.
//
// Stores must be safe for concurrent use, although the queues in this
// package serialise their calls.
type Store interface {
	// Open makes the store ready. A persistent store loads its state and
	// puts entries that were reserved but never acknowledged back into
	// their sub-queues with their original IDs (at-least-once delivery).
	Open(ctx context.Context) error

	// Push adds e and assigns e.ID. An entry with a non-zero NotBefore
	// goes to the delayed set until PromoteDue moves it to its sub-queue.
	Push(ctx context.Context, e *Entry) error

	// Head returns the Info of the best entry of queue (see ordering) and
	// true, or false when the sub-queue is empty. It need not decode the
	// request.
	Head(ctx context.Context, queue string) (Info, bool, error)

	// Reserve takes the best entry of queue out of line and records it as
	// reserved: it no longer counts in Len or Head, but stays stored until
	// Ack. It returns an error wrapping ErrEmpty for an empty sub-queue.
	Reserve(ctx context.Context, queue string) (Entry, error)

	// Ack forgets a reserved entry for good (its outcome is recorded).
	Ack(ctx context.Context, id ID) error

	// Nack puts a reserved entry back into its sub-queue, keeping its ID
	// and therefore its place among entries of equal priority.
	Nack(ctx context.Context, id ID) error

	// NextDue returns the earliest NotBefore of the delayed set, and false
	// when the set is empty.
	NextDue(ctx context.Context) (time.Time, bool, error)

	// PromoteDue moves every delayed entry whose NotBefore is not after
	// now into its sub-queue (with NotBefore cleared) and returns their
	// Info, in NotBefore order.
	PromoteDue(ctx context.Context, now time.Time) ([]Info, error)

	// Queues calls fn with the name of every non-empty sub-queue (delayed
	// entries not counted), in any order, stopping at fn's first error.
	// Queues use it to rebuild their in-memory index after Open.
	Queues(ctx context.Context, fn func(queue string) error) error

	// Len returns the number of entries waiting: in sub-queues or delayed,
	// not reserved.
	Len() int

	// Close releases the store. A persistent store keeps every entry not
	// acknowledged, reserved ones included, for the next Open.
	Close(ctx context.Context) error
}

// Flusher is implemented by stores that group their writes (the Pebble
// store of JOBDIR): Push and Ack are recorded in memory at once and reach
// the disk together, in order, as one atomic write, at the next Flush (or
// earlier, when the store must read the disk or its pending writes grow
// large). The scheduler's owner calls Flush at points where everything
// recorded so far must be durable as a whole: the engine, once per turn of
// its loop, before it starts new requests. An error wraps ErrStorage.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Codec turns requests into bytes and back, for stores that persist them.
// reqcodec.Codec is the codec of every store of this module: it writes a
// versioned format, so that a job directory written by one release can be
// read by the next, and keeps callbacks by method name (a request whose
// callback is a closure cannot be encoded and gives an error wrapping
// spider.ErrNotMethod). A codec of your own wraps it, to compress or
// encrypt its bytes for example: only reqcodec can give a decoded request
// the callback names the engine resolves.
//
// A codec may also have the method
//
//	Append(dst []byte, req *spider.Request) ([]byte, error)
//
// (reqcodec.Codec has): a store that finds it encodes into a buffer it
// reuses instead of a new one per request. It must append exactly what
// Encode returns and fail exactly when Encode fails; a codec that wraps
// another and changes Encode must then change Append as well.
type Codec interface {
	// Encode returns the bytes of req.
	Encode(req *spider.Request) ([]byte, error)
	// Decode returns the request encoded in data, with Callback and
	// Errback nil and their names carried out of sight; the engine
	// resolves them on the spider.
	Decode(data []byte) (*spider.Request, error)
}
