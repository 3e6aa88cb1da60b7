package pebbleq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/internal/pebblefatal"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
)

// Set is the dupefilter's fingerprint set kept in the job's Pebble
// database (key prefix jobdir.PrefixDupes), so a resumed crawl does not
// queue again what it queued before the pause.
//
// A fingerprint is written in the same Pebble batch as the next request
// pushed into the Store it is attached to (see Store.AttachSet; with
// GroupWrites, the fingerprints of a pending batch are added to it, in key
// order, when it is committed): the
// scheduler records a fingerprint just before pushing its request, so the
// two become durable together. A crash can therefore never leave a
// fingerprint on disk whose request was lost, which would make the request
// look like a duplicate forever.
//
// Lookups first ask memory: the fingerprints not yet written or not yet
// committed (normally a page's worth), then a bounded cache of the
// fingerprints most recently looked up or added (RecentFingerprints, about
// 3 MB), which answers most duplicates of a crawl (links to pages found a
// moment ago: menus, siblings, parents) without touching Pebble, then a
// bloom filter of every fingerprint (setfilter.go, 1.2 MB for the first
// million, grown by layers),
// which answers most new fingerprints. Only the rest go to Pebble.
type Set struct {
	db     *pebble.DB
	prefix string
	write  func(op string, fn func() error) error // see Options.Write
	flush  func(ctx context.Context) error        // the attached Store's Flush

	mu      sync.Mutex
	pending map[dupefilter.Fingerprint]struct{} // not yet in a batch
	inBatch map[dupefilter.Fingerprint]struct{} // in a batch not yet committed
	recent  recentSet
	filter  setFilter // setfilter.go
	n       int
	counted bool
}

var _ dupefilter.Set = (*Set)(nil)

// RecentFingerprints is how many fingerprints a Set remembers in memory,
// in two generations of half as many: when the newer generation is full,
// the older one is dropped. Memory is bounded (about 3 MB) whatever the
// size of the crawl.
const RecentFingerprints = 1 << 16

// recentSet is a bounded set of fingerprints with two generations: a hit
// in the older one moves the fingerprint to the newer one, so fingerprints
// in use stay while the others age out.
type recentSet struct {
	cur, old map[dupefilter.Fingerprint]struct{}
}

func (r *recentSet) has(fp dupefilter.Fingerprint) bool {
	if _, ok := r.cur[fp]; ok {
		return true
	}
	if _, ok := r.old[fp]; ok {
		r.add(fp)
		return true
	}
	return false
}

func (r *recentSet) add(fp dupefilter.Fingerprint) {
	if r.cur == nil {
		r.cur = make(map[dupefilter.Fingerprint]struct{}, RecentFingerprints/2)
	}
	if len(r.cur) >= RecentFingerprints/2 {
		// The older generation's map is reused for the new one.
		old := r.old
		clear(old)
		r.old, r.cur = r.cur, old
		if r.cur == nil {
			r.cur = make(map[dupefilter.Fingerprint]struct{}, RecentFingerprints/2)
		}
	}
	r.cur[fp] = struct{}{}
}

func (r *recentSet) remove(fp dupefilter.Fingerprint) {
	delete(r.cur, fp)
	delete(r.old, fp)
}

// NewSet returns a fingerprint set over db under prefix.
func NewSet(db *pebble.DB, prefix string) *Set {
	return &Set{
		db: db, prefix: prefix, write: new(pebblefatal.Breaker).Do,
		pending: map[dupefilter.Fingerprint]struct{}{}, inBatch: map[dupefilter.Fingerprint]struct{}{},
	}
}

func (s *Set) key(fp dupefilter.Fingerprint) []byte {
	return append([]byte(s.prefix), fp[:]...)
}

// Add implements dupefilter.Set.
func (s *Set) Add(ctx context.Context, fp dupefilter.Fingerprint) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[fp]; ok {
		return true, nil
	}
	if _, ok := s.inBatch[fp]; ok {
		return true, nil
	}
	if s.recent.has(fp) {
		return true, nil
	}
	maybe, err := s.maybeHas(fp)
	if err != nil {
		return false, err
	}
	if !maybe {
		s.added(fp)
		return false, nil
	}
	var kb [32]byte
	_, closer, err := s.db.Get(append(append(kb[:0], s.prefix...), fp[:]...))
	switch {
	case err == nil:
		closer.Close()
		s.recent.add(fp)
		return true, nil
	case !errors.Is(err, pebble.ErrNotFound):
		return false, fmt.Errorf("pebbleq: dupefilter lookup: %w", err)
	}
	s.added(fp)
	return false, nil
}

// added records fp, new, as seen: pending until the next push writes it.
func (s *Set) added(fp dupefilter.Fingerprint) {
	s.pending[fp] = struct{}{}
	s.recent.add(fp)
	s.remember(fp)
	s.n++
}

// Forget implements dupefilter.Forgetter: a fingerprint whose request was
// rejected is dropped from the pending ones, or deleted if already written.
func (s *Set) Forget(ctx context.Context, fp dupefilter.Fingerprint) error {
	s.mu.Lock()
	s.recent.remove(fp)
	if _, ok := s.pending[fp]; ok {
		delete(s.pending, fp)
		s.n--
		s.mu.Unlock()
		return nil
	}
	_, inBatch := s.inBatch[fp]
	s.mu.Unlock()
	if inBatch && s.flush != nil {
		// Written to the store's pending batch: commit it first, so that
		// the delete comes after the write.
		if err := s.flush(ctx); err != nil {
			return err
		}
	}
	if err := s.write("dupefilter forget", func() error { return s.db.Delete(s.key(fp), pebble.NoSync) }); err != nil {
		return fmt.Errorf("pebbleq: dupefilter forget: %w: %w", pqueue.ErrStorage, err)
	}
	return nil
}

var _ dupefilter.Forgetter = (*Set)(nil)

// writePending adds the fingerprints not yet written to b.
func (s *Set) writePending(b *pebble.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kb [32]byte
	for fp := range s.pending {
		if err := b.Set(append(append(kb[:0], s.prefix...), fp[:]...), nil, nil); err != nil {
			return err
		}
		s.inBatch[fp] = struct{}{}
	}
	clear(s.pending)
	return nil
}

// stage moves the fingerprints not yet written to those of the pending
// batch (GroupWrites): they belong to the request being pushed into it,
// and writeStaged adds them to it when it is committed.
func (s *Set) stage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fp := range s.pending {
		s.inBatch[fp] = struct{}{}
	}
	clear(s.pending)
}

// writeStaged adds the staged fingerprints to b in key order. Pebble
// inserts a batch's keys into its memtable one by one, each search
// starting from where the previous one ended: fingerprints are random,
// and written between the queue's keys (one per push) each one searched
// the memtable from the top; sorted and together, each starts next to
// the previous one.
func (s *Set) writeStaged(b *pebble.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inBatch) == 0 {
		return nil
	}
	fps := make([]dupefilter.Fingerprint, 0, len(s.inBatch))
	for fp := range s.inBatch {
		fps = append(fps, fp)
	}
	slices.SortFunc(fps, func(a, b dupefilter.Fingerprint) int { return bytes.Compare(a[:], b[:]) })
	var kb [32]byte
	for _, fp := range fps {
		if err := b.Set(append(append(kb[:0], s.prefix...), fp[:]...), nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// committed tells the set that the batches its pending fingerprints went
// to are committed.
func (s *Set) committed() {
	s.mu.Lock()
	clear(s.inBatch)
	s.mu.Unlock()
}

// Len implements dupefilter.Set. The first call counts the stored
// fingerprints (one pass over the keys) and those added but not yet
// written; later calls follow Add and Forget.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.counted {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(s.prefix), UpperBound: prefixEnd([]byte(s.prefix))})
		if err == nil {
			n := 0
			for it.First(); it.Valid(); it.Next() {
				n++
			}
			it.Close()
			// The keys include what this set added and wrote already:
			// count them there, not twice.
			s.n = n + len(s.pending) + len(s.inBatch)
			s.counted = true
		}
	}
	return s.n
}

// Close implements dupefilter.Set: fingerprints not yet written (their
// request was rejected) are written now.
func (s *Set) Close(ctx context.Context) error {
	b := s.db.NewBatch()
	defer b.Close()
	s.mu.Lock()
	fps := make([]dupefilter.Fingerprint, 0, len(s.pending))
	for fp := range s.pending {
		fps = append(fps, fp)
	}
	s.mu.Unlock()
	if err := s.writePending(b); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	if err := s.write("dupefilter close", func() error { return b.Commit(pebble.NoSync) }); err != nil {
		return fmt.Errorf("pebbleq: dupefilter close: %w: %w", pqueue.ErrStorage, err)
	}
	// Only these are committed: fingerprints staged in the store's
	// pending batch are written with it.
	s.mu.Lock()
	for _, fp := range fps {
		delete(s.inBatch, fp)
	}
	s.mu.Unlock()
	return nil
}
