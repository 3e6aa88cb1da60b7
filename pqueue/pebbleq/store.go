package pebbleq

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/internal/pebblefatal"
	"github.com/gocrawl/gocrawl/pqueue"
)

// idBlock is how many IDs are reserved with one write of the "n" key.
const idBlock = 1 << 14

// Options configure a Store.
type Options struct {
	// Codec encodes requests (reqcodec.Codec). Required.
	Codec pqueue.Codec
	// Prefix is the key prefix of the store inside the database
	// (jobdir.PrefixQueue by default).
	Prefix string
	// HeadBuffer is how many entries of a sub-queue being consumed are read
	// ahead into memory (default 128). Once MaxBuffered entries are held in
	// read-ahead buffers across all sub-queues, sub-queues read one entry
	// at a time, so memory stays bounded with very many hosts.
	HeadBuffer int
	// MaxBuffered bounds the entries held in read-ahead buffers (default
	// 65536, about 15 MB for typical requests).
	MaxBuffered int
	// OnAck, when set, is called by Ack with the batch that deletes the
	// acknowledged entry, before it is committed: whatever it adds becomes
	// durable atomically with the ack. The job directory uses it to flush
	// the item feeds and record their offsets, so that a resumed crawl
	// never loses the items of a request it will not fetch again.
	OnAck func(b *pebble.Batch) error
	// AfterWrite, when set, is called after each committed write (push,
	// ack, promotion, a flush of grouped writes), possibly with the
	// store's lock held: it must be quick and must not call the store.
	// The job directory uses it to start a WAL sync soon (see
	// jobdir.Options.SyncInterval).
	AfterWrite func()
	// GroupWrites makes Push and Ack, and the fingerprints of an attached
	// Set, add to one pending Pebble batch instead of committing one
	// batch each. The pending batch is committed, as one atomic write and
	// in the order of the calls, by Flush, before the store reads the disk
	// (a refill of a sub-queue, Nack, PromoteDue), when it reaches
	// MaxPendingBytes, and by Close. Until then the calls are visible in
	// memory (Len, Head, Reserve) but not on disk: a crash loses the
	// pending writes as one, never a part of them, so the database stays
	// a prefix of the calls. The engine calls Flush once per turn of its
	// loop, before it starts new requests (see docs/jobs.md). OnAck runs
	// once per flush that holds an acknowledgement.
	GroupWrites bool
	// MaxPendingBytes bounds the pending batch of GroupWrites (default 4
	// MiB): a Push or Ack that makes it larger commits it.
	MaxPendingBytes int
	// AfterAcks, when set, is called with the store's lock held after a
	// committed write that holds n acknowledgements (GroupWrites). The job
	// directory uses it to bound the acknowledgements committed but still
	// in Pebble's buffer: past a limit it writes the log out to the
	// operating system (without waiting for the disk), so that a process
	// crash cannot lose more than that many (see
	// jobdir.Job.LimitUnsynced). An error fails the write.
	AfterAcks func(n int) error
	// Write, when set, runs every write of the store (and of its attached
	// Set) to the database: fn commits, and Write returns its error. The
	// job directory uses it to guard all writes to its database with one
	// breaker: after a fatal write error (a full disk) Pebble must not be
	// written again, and every later write fails at once. Without it the
	// store guards its own writes the same way.
	Write func(op string, fn func() error) error
}

// Store is a pqueue.Store kept in a Pebble database. Create it with New;
// the database belongs to the caller (usually a jobdir.Job) and must stay
// open until Close.
type Store struct {
	db     *pebble.DB
	codec  pqueue.Codec
	qp     []byte // sub-queue keys
	dp     []byte // delayed keys
	np     []byte // ID high-water key
	hb     int
	maxBuf int
	onAck  func(b *pebble.Batch) error
	after  func()
	write  func(op string, fn func() error) error
	group  bool
	maxPen int
	acked  func(n int) error

	seen *Set // fingerprints written with each push

	mu       sync.Mutex
	open     bool
	nextID   uint64 // last ID handed out
	idLimit  uint64 // IDs up to this are recorded as used
	queues   map[string]*subq
	reserved map[pqueue.ID]*item
	waiting  int // entries in sub-queues, not reserved
	buffered int // entries held in read-ahead buffers
	delayed  int // entries in the delayed set
	due      time.Time

	names  names  // queue and scope names read back (codec.go)
	valBuf []byte // a Push's record and key, until the batch copies them
	keyBuf []byte

	// GroupWrites: the writes not yet committed (write.go).
	pend     *pebble.Batch
	pendAcks int   // acknowledgements in pend
	failed   error // a failed flush: every later write fails with it
}

type subq struct {
	name   string
	prefix []byte
	n      int     // entries waiting (not reserved)
	buf    []*item // the best entries, sorted by key
	cursor []byte  // every waiting key <= cursor is in buf; nil = nothing read
}

type item struct {
	key  []byte
	info pqueue.Info
	val  []byte
}

var _ pqueue.Store = (*Store)(nil)

// New returns a store over db. Call Open before use.
func New(db *pebble.DB, o Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("pebbleq: nil database")
	}
	if o.Codec == nil {
		return nil, errors.New("pebbleq: Options.Codec is required")
	}
	if o.Prefix == "" {
		o.Prefix = "q"
	}
	if o.HeadBuffer <= 0 {
		o.HeadBuffer = 128
	}
	if o.MaxBuffered <= 0 {
		o.MaxBuffered = 1 << 16
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = 4 << 20
	}
	if o.Write == nil {
		o.Write = new(pebblefatal.Breaker).Do
	}
	p := []byte(o.Prefix)
	return &Store{
		db: db, codec: o.Codec, hb: o.HeadBuffer, maxBuf: o.MaxBuffered, onAck: o.OnAck, after: o.AfterWrite, write: o.Write,
		group: o.GroupWrites, maxPen: o.MaxPendingBytes, acked: o.AfterAcks,
		qp: append(slices.Clip(p), 'q'), dp: append(slices.Clip(p), 'd'), np: append(slices.Clip(p), 'n'),
	}, nil
}

// AttachSet makes every Push write the fingerprints recorded in set since
// the previous push, in the same batch as the request (see Set). Call it
// before Open.
func (s *Store) AttachSet(set *Set) {
	s.seen = set
	set.write = s.write
	set.flush = s.Flush
}

// Open implements pqueue.Store: it counts the stored entries per
// sub-queue (one pass over the keys) and reads the ID high-water mark.
// Entries reserved before a crash or Close are simply back in line.
func (s *Store) Open(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues = map[string]*subq{}
	s.reserved = map[pqueue.ID]*item{}
	s.waiting, s.delayed, s.due, s.buffered = 0, 0, time.Time{}, 0
	s.nextID, s.idLimit = 0, 0

	if v, closer, err := s.db.Get(s.np); err == nil {
		if len(v) != 8 {
			closer.Close()
			return fmt.Errorf("%w: ID record has %d bytes", ErrCorrupt, len(v))
		}
		s.nextID = binary.BigEndian.Uint64(v)
		s.idLimit = s.nextID
		closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return err
	}

	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.qp, UpperBound: prefixEnd(s.qp)})
	if err != nil {
		return err
	}
	var cur *subq
	for it.First(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			it.Close()
			return err
		}
		k := it.Key()
		name, id, err := s.parseQueueKey(k)
		if err != nil {
			it.Close()
			return err
		}
		if cur == nil || cur.name != string(name) {
			cur = s.subq(string(name))
		}
		cur.n++
		s.waiting++
		s.nextID = max(s.nextID, id)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}

	it, err = s.db.NewIter(&pebble.IterOptions{LowerBound: s.dp, UpperBound: prefixEnd(s.dp)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		notBefore, id, err := s.parseDelayedKey(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		if s.delayed == 0 {
			s.due = notBefore
		}
		s.delayed++
		s.nextID = max(s.nextID, id)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	s.idLimit = max(s.idLimit, s.nextID)
	s.open = true
	return nil
}

func (s *Store) subq(name string) *subq {
	q, ok := s.queues[name]
	if !ok {
		q = &subq{name: name, prefix: s.queuePrefix(name)}
		s.queues[name] = q
	}
	return q
}

// inLine counts the entry whose key is key as waiting in q, buffering it
// (the item that keep returns) when it sorts within the part of q already
// read into memory.
func (s *Store) inLine(q *subq, key []byte, keep func() *item) {
	q.n++
	s.waiting++
	if beyondCursor(q, key) {
		return // on disk beyond what was read; a refill finds it
	}
	it := keep()
	i, _ := slices.BinarySearchFunc(q.buf, it.key, func(a *item, k []byte) int { return bytes.Compare(a.key, k) })
	q.buf = slices.Insert(q.buf, i, it)
	s.buffered++
	if keep := max(1, min(s.hb, s.maxBuf-s.buffered)); len(q.buf) > 2*keep {
		// Too many high-priority arrivals: forget the tail (it is on
		// disk) and move the cursor back.
		s.buffered -= len(q.buf) - keep
		clear(q.buf[keep:])
		q.buf = q.buf[:keep]
		q.cursor = q.buf[keep-1].key
	}
}

// beyondCursor reports whether key is past what q's read-ahead buffer
// covers (everything, when nothing was read): such an entry is found on
// disk by the next refill instead of joining the buffer.
func beyondCursor(q *subq, key []byte) bool {
	return q.cursor == nil || bytes.Compare(key, q.cursor) > 0
}

// fill makes sure q's buffer holds its best entry when q has one, reading
// up to limit entries from disk.
func (s *Store) fill(q *subq, limit int) error {
	if len(q.buf) > 0 || q.n == 0 {
		return nil
	}
	// The entries to read may still be in the pending batch.
	if err := s.flushLocked(); err != nil {
		return err
	}
	lower := q.prefix
	if q.cursor != nil {
		lower = append(slices.Clip(q.cursor), 0) // the key right after the cursor
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(q.prefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid() && len(q.buf) < limit; it.Next() {
		key := slices.Clone(it.Key())
		q.cursor = key
		_, id, err := s.parseQueueKey(key)
		if err != nil {
			it.Close()
			return err
		}
		if _, r := s.reserved[pqueue.ID(id)]; r {
			continue
		}
		val, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		info, _, err := parseRecord(val, &s.names)
		if err != nil {
			it.Close()
			return fmt.Errorf("%w: entry %d: %v", ErrCorrupt, id, err)
		}
		info.ID, info.NotBefore = pqueue.ID(id), time.Time{}
		q.buf = append(q.buf, &item{key: key, info: info, val: slices.Clone(val)})
		s.buffered++
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	if len(q.buf) == 0 {
		return fmt.Errorf("%w: sub-queue %q should hold %d entries but none was found", ErrCorrupt, q.name, q.n)
	}
	return nil
}

// readAhead is how many entries a refill reads: HeadBuffer, or 1 once the
// buffers hold MaxBuffered entries.
func (s *Store) readAhead() int {
	if s.buffered >= s.maxBuf {
		return 1
	}
	return s.hb
}

// Head implements pqueue.Store.
func (s *Store) Head(ctx context.Context, queue string) (pqueue.Info, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return pqueue.Info{}, false, pqueue.ErrClosed
	}
	q, ok := s.queues[queue]
	if !ok || q.n == 0 {
		return pqueue.Info{}, false, nil
	}
	// Read ahead as Reserve does: the throttling-aware queue asks for the
	// next head right after each reserve, so reading one entry here would
	// make every pop open an iterator.
	if err := s.fill(q, s.readAhead()); err != nil {
		return pqueue.Info{}, false, err
	}
	return q.buf[0].info, true, nil
}

// Reserve implements pqueue.Store.
func (s *Store) Reserve(ctx context.Context, queue string) (pqueue.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return pqueue.Entry{}, pqueue.ErrClosed
	}
	q, ok := s.queues[queue]
	if !ok || q.n == 0 {
		return pqueue.Entry{}, fmt.Errorf("reserve from %q: %w", queue, pqueue.ErrEmpty)
	}
	if err := s.fill(q, s.readAhead()); err != nil {
		return pqueue.Entry{}, err
	}
	it := q.buf[0]
	_, reqBytes, err := parseRecord(it.val, &s.names)
	if err != nil {
		return pqueue.Entry{}, fmt.Errorf("%w: entry %d: %v", ErrCorrupt, it.info.ID, err)
	}
	req, err := s.codec.Decode(reqBytes)
	if err != nil {
		return pqueue.Entry{}, fmt.Errorf("pebbleq: entry %d in %q: %w", it.info.ID, queue, err)
	}
	q.buf[0] = nil
	q.buf = q.buf[1:]
	s.buffered--
	if len(q.buf) == 0 {
		q.buf = nil // let the backing array go
	}
	q.n--
	s.waiting--
	it.val = nil // Nack re-reads it from disk when needed
	s.reserved[it.info.ID] = it
	return pqueue.Entry{Info: it.info, Req: req}, nil
}

// Nack implements pqueue.Store.
func (s *Store) Nack(ctx context.Context, id pqueue.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return pqueue.ErrClosed
	}
	it, ok := s.reserved[id]
	if !ok {
		return fmt.Errorf("nack %d: %w", id, pqueue.ErrUnknownID)
	}
	q := s.subq(it.info.Queue)
	if !beyondCursor(q, it.key) {
		if err := s.flushLocked(); err != nil {
			return fmt.Errorf("pebbleq: nack %d: %w", id, err)
		}
		v, closer, err := s.db.Get(it.key)
		if err != nil {
			return fmt.Errorf("pebbleq: nack %d: %w", id, err)
		}
		it.val = slices.Clone(v)
		closer.Close()
	}
	delete(s.reserved, id)
	s.inLine(q, it.key, func() *item { return it })
	return nil
}

// NextDue implements pqueue.Store.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return time.Time{}, false, pqueue.ErrClosed
	}
	if s.delayed == 0 {
		return time.Time{}, false, nil
	}
	return s.due, true, nil
}

// PromoteDue implements pqueue.Store.
func (s *Store) PromoteDue(ctx context.Context, now time.Time) ([]pqueue.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return nil, pqueue.ErrClosed
	}
	if s.delayed == 0 || s.due.After(now) {
		return nil, nil
	}
	// Delayed entries to move may still be in the pending batch.
	if err := s.flushLocked(); err != nil {
		return nil, err
	}
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.dp, UpperBound: s.dueBound(now)})
	if err != nil {
		return nil, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	var moved []*item
	for iter.First(); iter.Valid(); iter.Next() {
		k := iter.Key()
		_, id, err := s.parseDelayedKey(k)
		if err != nil {
			iter.Close()
			return nil, err
		}
		val, err := iter.ValueAndErr()
		if err != nil {
			iter.Close()
			return nil, err
		}
		info, _, err := parseRecord(val, &s.names)
		if err != nil {
			iter.Close()
			return nil, fmt.Errorf("%w: delayed entry %d: %v", ErrCorrupt, id, err)
		}
		info.ID, info.NotBefore = pqueue.ID(id), time.Time{}
		qk := s.queueKey(s.subq(info.Queue), info.Priority, id)
		// The delayed key was set once, by Push; the sub-queue key is
		// new (it holds the entry's ID): both keep the set-once,
		// delete-once rule of SingleDelete (Ack).
		_ = b.SingleDelete(k, nil)
		_ = b.Set(qk, val, nil)
		moved = append(moved, &item{key: qk, info: info, val: slices.Clone(val)})
	}
	if err := errors.Join(iter.Error(), iter.Close()); err != nil {
		return nil, err
	}
	if err := s.commit("promote delayed entries", b); err != nil {
		return nil, fmt.Errorf("pebbleq: promote delayed entries: %w: %w", pqueue.ErrStorage, err)
	}
	s.wrote()
	out := make([]pqueue.Info, len(moved))
	for i, it := range moved {
		s.delayed--
		s.inLine(s.subq(it.info.Queue), it.key, func() *item { return it })
		out[i] = it.info
	}
	if s.delayed > 0 {
		due, err := s.firstDue()
		if err != nil {
			return out, err
		}
		s.due = due
	}
	return out, nil
}

func (s *Store) firstDue() (time.Time, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.dp, UpperBound: prefixEnd(s.dp)})
	if err != nil {
		return time.Time{}, err
	}
	defer it.Close()
	if !it.First() {
		return time.Time{}, errors.Join(it.Error(), fmt.Errorf("%w: delayed set should hold %d entries", ErrCorrupt, s.delayed))
	}
	return decodeTime(it.Key()[len(s.dp):]), nil
}

// Close implements pqueue.Store: pending writes (GroupWrites) are
// committed, and every entry not acknowledged, reserved ones included,
// stays in the database; the database itself is left open for its owner
// to close.
func (s *Store) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.failed == nil { // a failed flush was reported when it failed
		err = s.flushLocked()
	}
	if s.pend != nil {
		_ = s.pend.Close()
		s.pend = nil
	}
	s.open = false
	s.queues, s.reserved = nil, nil
	return err
}
