package pebbleq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/dupefilter"
	"github.com/gocrawl/gocrawl/internal/pebblefatal"
	"github.com/gocrawl/gocrawl/pqueue"
)

// Set is the dupefilter's fingerprint set kept in the job's Pebble
// database (key prefix jobdir.PrefixDupes), so a resumed crawl does not
// queue again what it queued before the pause.
//
// A fingerprint is written in the same Pebble batch as the next request
// pushed into the Store it is attached to (see Store.AttachSet): the
// scheduler records a fingerprint just before pushing its request, so the
// two become durable together. A crash can therefore never leave a
// fingerprint on disk whose request was lost, which would make the request
// look like a duplicate forever.
//
// Memory holds only fingerprints not yet written (normally at most one);
// lookups go to Pebble, whose bloom filters answer most misses without
// reading a block.
type Set struct {
	db     *pebble.DB
	prefix string
	write  func(op string, fn func() error) error // see Options.Write

	mu      sync.Mutex
	pending map[dupefilter.Fingerprint]struct{}
	n       int
	counted bool
}

var _ dupefilter.Set = (*Set)(nil)

// NewSet returns a fingerprint set over db under prefix.
func NewSet(db *pebble.DB, prefix string) *Set {
	return &Set{db: db, prefix: prefix, pending: map[dupefilter.Fingerprint]struct{}{}, write: new(pebblefatal.Breaker).Do}
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
	_, closer, err := s.db.Get(s.key(fp))
	switch {
	case err == nil:
		closer.Close()
		return true, nil
	case !errors.Is(err, pebble.ErrNotFound):
		return false, fmt.Errorf("pebbleq: dupefilter lookup: %w", err)
	}
	s.pending[fp] = struct{}{}
	s.n++
	return false, nil
}

// Forget implements dupefilter.Forgetter: a fingerprint whose request was
// rejected is dropped from the pending ones, or deleted if already written.
func (s *Set) Forget(ctx context.Context, fp dupefilter.Fingerprint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[fp]; ok {
		delete(s.pending, fp)
		s.n--
		return nil
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
	for fp := range s.pending {
		if err := b.Set(s.key(fp), nil, nil); err != nil {
			return err
		}
	}
	clear(s.pending)
	return nil
}

// Len implements dupefilter.Set. The first call counts the stored
// fingerprints (one pass over the keys).
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
			s.n += n
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
	if err := s.writePending(b); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	if err := s.write("dupefilter close", func() error { return b.Commit(pebble.NoSync) }); err != nil {
		return fmt.Errorf("pebbleq: dupefilter close: %w: %w", pqueue.ErrStorage, err)
	}
	return nil
}
