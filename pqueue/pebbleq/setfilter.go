package pebbleq

import (
	"errors"
	"fmt"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/dupefilter"
)

// This file is the Set's bloom filter: every fingerprint stored or added
// is in it, so a fingerprint it does not hold is new for sure, and Add
// answers without asking Pebble. Most fingerprints a crawl checks are new
// (a tree of pages links each page once), and Pebble answers those by
// searching its memtable and the bloom filters of its tables, a few
// microseconds on the engine's loop for every link found.
//
// The filter is built at the set's first lookup from the fingerprints on
// disk (one pass over their keys: what a resumed job pays once), sized
// for twice as many as there are, at least MinFilterCapacity. When more
// fingerprints than its capacity were added it is built again, twice as
// large, from the disk and the fingerprints not yet written. Forgotten
// fingerprints stay in it: a false "maybe" only costs a Pebble lookup.

// MinFilterCapacity is the smallest number of fingerprints a Set's bloom
// filter is sized for (1.2 MB at its 1 % false-positive rate).
const MinFilterCapacity = 1 << 20

// filterFalsePositives is the bloom filter's false-positive rate at
// capacity: the share of new fingerprints that still cost a Pebble lookup.
const filterFalsePositives = 0.01

// minFilterCapacity is MinFilterCapacity; tests lower it.
var minFilterCapacity uint = MinFilterCapacity

type setFilter struct {
	f   *bloom.BloomFilter
	n   uint // fingerprints added
	cap uint // what f is sized for
}

// maybeHas reports whether fp may be stored or added: false means it is
// new for sure. It builds or grows the filter when needed. s.mu is held.
func (s *Set) maybeHas(fp dupefilter.Fingerprint) (bool, error) {
	if s.filter.f == nil || s.filter.n >= s.filter.cap {
		if err := s.buildFilter(); err != nil {
			return false, err
		}
	}
	return s.filter.f.Test(fp[:]), nil
}

// remember adds fp to the filter (once built). s.mu is held.
func (s *Set) remember(fp dupefilter.Fingerprint) {
	if s.filter.f != nil {
		s.filter.f.Add(fp[:])
		s.filter.n++
	}
}

// buildFilter builds the filter from the fingerprints on disk and those
// not yet written. s.mu is held.
func (s *Set) buildFilter() error {
	var stored []dupefilter.Fingerprint
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(s.prefix), UpperBound: prefixEnd([]byte(s.prefix))})
	if err != nil {
		return fmt.Errorf("pebbleq: dupefilter: reading the fingerprints: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[len(s.prefix):]
		if len(k) != len(dupefilter.Fingerprint{}) {
			it.Close()
			return fmt.Errorf("%w: fingerprint key of %d bytes", ErrCorrupt, len(k))
		}
		stored = append(stored, dupefilter.Fingerprint(k))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("pebbleq: dupefilter: reading the fingerprints: %w", err)
	}
	n := uint(len(stored) + len(s.pending) + len(s.inBatch))
	c := max(minFilterCapacity, 2*n, 2*s.filter.cap)
	s.filter = setFilter{f: bloom.NewWithEstimates(c, filterFalsePositives), cap: c}
	for _, fp := range stored {
		s.remember(fp)
	}
	for fp := range s.pending {
		s.remember(fp)
	}
	for fp := range s.inBatch {
		s.remember(fp)
	}
	return nil
}
