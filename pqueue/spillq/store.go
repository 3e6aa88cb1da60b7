package spillq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/internal/pebblefatal"
	"github.com/gocrawl/gocrawl/internal/privfs"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/spider"
)

// Options configure a Store.
type Options struct {
	// Limit is how many entries may wait in memory before pushes go to
	// disk (see the package doc). It must be positive.
	Limit int
	// Dir is the folder in which the temporary database is created, in a
	// new sub-folder named gocrawl-spill-*, removed by Close. Empty means
	// os.TempDir().
	Dir string
	// Codec encodes the spilled requests (reqcodec.Codec). Required.
	Codec pqueue.Codec
	// Log receives the INFO line of the first spill and a summary at
	// Close.
	Log zerolog.Logger
	// HeadBuffer and MaxBuffered bound the spilled entries read ahead into
	// memory (pebbleq.Options; defaults 128 per sub-queue being consumed,
	// and 16384 in all).
	HeadBuffer, MaxBuffered int
}

// Store is a pqueue.Store that keeps at most Options.Limit waiting entries
// in memory and spills the rest to a temporary Pebble database. Create it
// with New.
type Store struct {
	o   Options
	mem *pqueue.MemoryStore

	mu      sync.Mutex
	open    bool
	closed  bool
	nextID  pqueue.ID
	failed  error // a failed disk operation: every later one fails with it
	dir     string
	db      *pebble.DB
	breaker *pebblefatal.Breaker
	disk    *pebbleq.Store // nil until the first spill
	// runs map the disk store's IDs, which it assigns in its own push
	// order, to this store's IDs (see diskRun).
	runs []diskRun
	// reserved holds the disk entries reserved: this store's ID -> the
	// disk store's.
	reserved map[pqueue.ID]pqueue.ID
	ungroup  bool // commit each write alone (benchmarks: what grouping saves)
	spills   int  // times spilling started
	spilled  int  // entries pushed to disk
	kept     int  // entries kept in memory because the codec refused them
}

// diskRun says that disk IDs from disk on map to store IDs from id on,
// one for one, up to the next run. Pushes to disk follow each other in
// both sequences, so a run breaks only when a push in between stays in
// memory (a request the codec refuses) or a new spill starts: the runs
// are few, and dropped whenever the disk part is empty.
type diskRun struct {
	disk, id pqueue.ID
}

var (
	_ pqueue.Store   = (*Store)(nil)
	_ pqueue.Flusher = (*Store)(nil)
)

// New returns a store, not yet opened. It creates nothing on disk: the
// database is created by the first push that spills.
func New(o Options) (*Store, error) {
	if o.Limit <= 0 {
		return nil, fmt.Errorf("spillq: Limit must be positive, not %d", o.Limit)
	}
	if o.Codec == nil {
		return nil, errors.New("spillq: Options.Codec is required")
	}
	if o.HeadBuffer <= 0 {
		o.HeadBuffer = 128
	}
	if o.MaxBuffered <= 0 {
		o.MaxBuffered = 1 << 14
	}
	return &Store{o: o, mem: pqueue.NewMemoryStore(), reserved: map[pqueue.ID]pqueue.ID{}}, nil
}

// Open implements pqueue.Store. A store cannot be opened again after
// Close, which deletes its disk part.
func (s *Store) Open(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return pqueue.ErrClosed
	}
	if err := s.mem.Open(ctx); err != nil {
		return err
	}
	s.open = true
	return nil
}

// Dir returns the folder of the temporary database, or "" while nothing
// has spilled.
func (s *Store) Dir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dir
}

// Spilled returns how many pushes went to disk so far.
func (s *Store) Spilled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spilled
}

// InMemory returns how many entries wait in memory (delayed ones
// included).
func (s *Store) InMemory() int { return s.mem.Len() }

// usable returns the error an operation must fail with at once.
func (s *Store) usable() error {
	if !s.open {
		return pqueue.ErrClosed
	}
	return s.failed
}

// Push implements pqueue.Store.
func (s *Store) Push(ctx context.Context, e *pqueue.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	id := s.nextID + 1
	if e.NotBefore.IsZero() && s.spilling() {
		if err := s.openDisk(ctx); err != nil {
			return err
		}
		starts := s.disk.Len() == 0
		d := *e
		err := s.disk.Push(ctx, &d)
		var refused *unencodable
		switch {
		case err == nil:
			s.mapID(d.ID, id)
			s.nextID, e.ID = id, id
			s.spilled++
			if starts {
				s.started()
			}
			return nil
		case errors.As(err, &refused):
			// Not for disk: kept in memory, as without spilling.
			if s.kept == 0 {
				s.o.Log.Debug().Err(refused.err).Str("url", e.Req.String()).
					Msg("scheduler queue: a request that cannot be encoded stays in memory while the queue spills")
			}
			s.kept++
		default:
			return s.fail(fmt.Errorf("spilling %s: %w", e.Req, err))
		}
	}
	e.ID = id
	if err := s.mem.Insert(ctx, e); err != nil {
		return err
	}
	s.nextID = id
	return nil
}

// spilling tells whether a push goes to disk: the disk part still holds
// waiting entries, or memory holds Limit.
func (s *Store) spilling() bool {
	return (s.disk != nil && s.disk.Len() > 0) || s.mem.Len() >= s.o.Limit
}

// started logs the start of a spill: at INFO the first time, at DEBUG
// later (the disk part had drained in between).
func (s *Store) started() {
	s.spills++
	ev := s.o.Log.Debug()
	if s.spills == 1 {
		ev = s.o.Log.Info()
	}
	ev.Str("dir", s.dir).Int("in_memory", s.mem.Len()).Int("limit", s.o.Limit).Int("spill", s.spills).
		Msg("scheduler queue: more requests queued than SCHEDULER_MEMORY_MAX_REQUESTS, further ones go to a temporary folder until it drains")
}

// mapID records that disk ID d is store ID id.
func (s *Store) mapID(d, id pqueue.ID) {
	if n := len(s.runs); n > 0 {
		r := s.runs[n-1]
		if r.id+(d-r.disk) == id {
			return
		}
	}
	s.runs = append(s.runs, diskRun{disk: d, id: id})
}

// storeID returns the store ID of disk ID d.
func (s *Store) storeID(d pqueue.ID) pqueue.ID {
	i := sort.Search(len(s.runs), func(i int) bool { return s.runs[i].disk > d }) - 1
	if i < 0 {
		return 0
	}
	r := s.runs[i]
	return r.id + (d - r.disk)
}

// drained forgets the ID runs once the disk part holds nothing.
func (s *Store) drained() {
	if len(s.reserved) == 0 && s.disk.Len() == 0 {
		s.runs = s.runs[:0]
	}
}

// head returns the best entry of queue in either part, and whether it is
// on disk.
func (s *Store) head(ctx context.Context, queue string) (info pqueue.Info, ok, onDisk bool, err error) {
	mi, mok, err := s.mem.Head(ctx, queue)
	if err != nil || s.disk == nil {
		return mi, mok, false, err
	}
	di, dok, err := s.disk.Head(ctx, queue)
	if err != nil {
		return pqueue.Info{}, false, false, s.fail(fmt.Errorf("reading sub-queue %q: %w", queue, err))
	}
	if !dok {
		return mi, mok, false, nil
	}
	di.ID = s.storeID(di.ID)
	if mok && (mi.Priority > di.Priority || mi.Priority == di.Priority && mi.ID < di.ID) {
		return mi, true, false, nil
	}
	return di, true, true, nil
}

// Head implements pqueue.Store.
func (s *Store) Head(ctx context.Context, queue string) (pqueue.Info, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return pqueue.Info{}, false, err
	}
	info, ok, _, err := s.head(ctx, queue)
	return info, ok, err
}

// Reserve implements pqueue.Store.
func (s *Store) Reserve(ctx context.Context, queue string) (pqueue.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return pqueue.Entry{}, err
	}
	info, ok, onDisk, err := s.head(ctx, queue)
	switch {
	case err != nil:
		return pqueue.Entry{}, err
	case !ok:
		return pqueue.Entry{}, fmt.Errorf("reserve from %q: %w", queue, pqueue.ErrEmpty)
	case !onDisk:
		return s.mem.Reserve(ctx, queue)
	}
	e, err := s.disk.Reserve(ctx, queue)
	if err != nil {
		return pqueue.Entry{}, s.fail(fmt.Errorf("reading sub-queue %q: %w", queue, err))
	}
	if id := s.storeID(e.ID); id != info.ID {
		return pqueue.Entry{}, s.fail(fmt.Errorf("sub-queue %q: the disk returned entry %d, its head was %d", queue, id, info.ID))
	}
	s.reserved[info.ID] = e.ID
	e.ID = info.ID
	return e, nil
}

// Ack implements pqueue.Store.
func (s *Store) Ack(ctx context.Context, id pqueue.ID) error { return s.settle(ctx, id, true) }

// Nack implements pqueue.Store.
func (s *Store) Nack(ctx context.Context, id pqueue.ID) error { return s.settle(ctx, id, false) }

// settle acknowledges (ack) or gives back a reserved entry where it lives:
// in memory, or on disk for an entry reserved from the spilled part.
func (s *Store) settle(ctx context.Context, id pqueue.ID, ack bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	d, ok := s.reserved[id]
	if !ok {
		if ack {
			return s.mem.Ack(ctx, id)
		}
		return s.mem.Nack(ctx, id)
	}
	if ack {
		if err := s.disk.Ack(ctx, d); err != nil {
			return s.fail(fmt.Errorf("ack %d: %w", id, err))
		}
	} else if err := s.disk.Nack(ctx, d); err != nil {
		return s.fail(fmt.Errorf("nack %d: %w", id, err))
	}
	delete(s.reserved, id)
	if ack {
		s.drained()
	}
	return nil
}

// NextDue implements pqueue.Store; the delayed set is in memory.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return time.Time{}, false, err
	}
	return s.mem.NextDue(ctx)
}

// PromoteDue implements pqueue.Store; the delayed set is in memory, and
// promoted entries stay there.
func (s *Store) PromoteDue(ctx context.Context, now time.Time) ([]pqueue.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	return s.mem.PromoteDue(ctx, now)
}

// Queues implements pqueue.Store.
func (s *Store) Queues(ctx context.Context, fn func(queue string) error) error {
	s.mu.Lock()
	names := map[string]struct{}{}
	collect := func(q string) error { names[q] = struct{}{}; return nil }
	err := s.usable()
	if err == nil {
		err = s.mem.Queues(ctx, collect)
	}
	if err == nil && s.disk != nil {
		err = s.disk.Queues(ctx, collect)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for q := range names {
		if err := fn(q); err != nil {
			return err
		}
	}
	return nil
}

// Len implements pqueue.Store.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.mem.Len()
	if s.disk != nil {
		n += s.disk.Len()
	}
	return n
}

// Flush implements pqueue.Flusher: it commits the spilled pushes and the
// acknowledgements recorded since the last one, as one Pebble write.
func (s *Store) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil || s.disk == nil {
		return err
	}
	if err := s.disk.Flush(ctx); err != nil {
		return s.fail(err)
	}
	return nil
}

// Close implements pqueue.Store: the entries still queued are dropped
// (nothing without JOBDIR is resumable), and the temporary database and
// its folder are deleted, after a failure as well.
func (s *Store) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed, s.open = true, false
	errs := []error{s.mem.Close(ctx)}
	if s.disk != nil {
		_ = s.disk.Close(ctx) // its pending writes no longer matter
		if s.breaker.Err() == nil {
			errs = append(errs, s.breaker.Do("closing", s.db.Close))
		}
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, fmt.Errorf("spillq: removing the spill folder: %w", err))
		} else {
			s.o.Log.Info().Str("dir", s.dir).Int("spilled", s.spilled).Int("kept_in_memory", s.kept).
				Msg("scheduler queue: temporary spill folder removed")
		}
		s.disk, s.db, s.runs, s.reserved = nil, nil, nil, nil
	}
	return errors.Join(errs...)
}

// openDisk creates the temporary database on the first spill.
func (s *Store) openDisk(ctx context.Context) error {
	if s.disk != nil {
		return nil
	}
	parent := s.o.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "gocrawl-spill-")
	if err != nil {
		return s.fail(fmt.Errorf("creating a folder in %s: %w", parent, err))
	}
	b := new(pebblefatal.Breaker)
	var db *pebble.DB
	err = b.Do("opening the database", func() (err error) {
		db, err = pebble.Open(dir, &pebble.Options{
			Logger: b.Logger(),
			// Spilled requests carry their headers (Authorization):
			// files 0600 in a 0700 folder, whatever the umask.
			FS: privfs.FS(nil),
			// Nothing is resumable: no log to write, nothing to sync.
			DisableWAL: true,
			// Pebble's memtable and cache are the memory the spill
			// costs; its defaults (4 MB, 8 MB) keep it small.
		})
		return err
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return s.fail(fmt.Errorf("opening a database in %s: %w", dir, err))
	}
	disk, err := pebbleq.New(db, pebbleq.Options{
		Codec:       codec{s.o.Codec},
		HeadBuffer:  s.o.HeadBuffer,
		MaxBuffered: s.o.MaxBuffered,
		GroupWrites: !s.ungroup,
		Write:       b.Do,
	})
	if err == nil {
		err = disk.Open(ctx)
	}
	if err != nil {
		_ = db.Close()
		_ = os.RemoveAll(dir)
		return s.fail(err)
	}
	s.dir, s.db, s.breaker, s.disk = dir, db, b, disk
	return nil
}

// fail records err, of kind pqueue.ErrStorage, as the store's failure.
func (s *Store) fail(err error) error {
	if !errors.Is(err, pqueue.ErrStorage) {
		err = fmt.Errorf("%w: %w", pqueue.ErrStorage, err)
	}
	s.failed = fmt.Errorf("scheduler queue spilled to disk: %w", err)
	return s.failed
}

// codec is the caller's codec with its refusals marked, so that Push
// tells a request that cannot be encoded (kept in memory) from a disk
// failure (the crawl stops).
type codec struct{ pqueue.Codec }

func (c codec) Encode(req *spider.Request) ([]byte, error) {
	b, err := c.Codec.Encode(req)
	if err != nil {
		return nil, &unencodable{err}
	}
	return b, nil
}

// unencodable is an encoding refused by the codec.
type unencodable struct{ err error }

func (e *unencodable) Error() string { return e.err.Error() }
func (e *unencodable) Unwrap() error { return e.err }
