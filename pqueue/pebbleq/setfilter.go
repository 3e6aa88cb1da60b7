package pebbleq

import (
	"errors"
	"fmt"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cockroachdb/pebble/v2"

	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
)

// This file is the Set's bloom filter: every fingerprint stored or added
// is in it, so a fingerprint it does not hold is new for sure, and Add
// answers without asking Pebble. Most fingerprints a crawl checks are new
// (a tree of pages links each page once), and Pebble answers those by
// searching its memtable and the bloom filters of its tables, a few
// microseconds on the engine's loop for every link found.
//
// The filter is built at the set's first lookup from the fingerprints on
// disk (one pass over their keys: what a resumed job pays once, about a
// second per million fingerprints here), sized for at least
// MinFilterCapacity and for more than there are. When as many
// fingerprints as its newest layer holds were added, a new layer twice as
// large, at half the false-positive rate, takes the next ones (a scalable
// bloom filter): growing never reads the disk, so the engine's loop never
// waits for it, and the layers' false positives add up to less than twice
// the first layer's rate. Forgotten fingerprints stay in it: a false
// "maybe" only costs a Pebble lookup.

// MinFilterCapacity is the smallest number of fingerprints a Set's bloom
// filter is sized for (1.2 MB at its 1 % false-positive rate).
const MinFilterCapacity = 1 << 20

// filterFalsePositives is the bloom filter's false-positive rate at
// capacity: the share of new fingerprints that still cost a Pebble lookup.
const filterFalsePositives = 0.01

// minFilterCapacity is MinFilterCapacity; tests lower it.
var minFilterCapacity uint = MinFilterCapacity

type setFilter struct {
	// full are the layers that reached their capacity, oldest first; f is
	// the layer fingerprints are added to.
	full []*bloom.BloomFilter
	f    *bloom.BloomFilter
	n    uint    // fingerprints added to f
	cap  uint    // what f is sized for
	fp   float64 // f's false-positive rate at capacity
	// builds counts the builds from the disk (one per set, at its first
	// lookup: growing does not read the disk).
	builds int
}

// maybeHas reports whether fp may be stored or added: false means it is
// new for sure. It builds the filter at the first lookup and adds a layer
// when the newest one is full. s.mu is held.
func (s *Set) maybeHas(fp dupefilter.Fingerprint) (bool, error) {
	if s.filter.f == nil {
		if err := s.buildFilter(); err != nil {
			return false, err
		}
	}
	if s.filter.n >= s.filter.cap {
		s.filter.grow()
	}
	if s.filter.f.Test(fp[:]) {
		return true, nil
	}
	for _, l := range s.filter.full {
		if l.Test(fp[:]) {
			return true, nil
		}
	}
	return false, nil
}

// grow starts a new layer twice as large as the newest, at half its
// false-positive rate.
func (f *setFilter) grow() {
	f.full = append(f.full, f.f)
	f.cap *= 2
	f.fp /= 2
	f.f = bloom.NewWithEstimates(f.cap, f.fp)
	f.n = 0
}

// remember adds fp to the filter (once built). s.mu is held.
func (s *Set) remember(fp dupefilter.Fingerprint) {
	if s.filter.f != nil {
		if s.filter.n >= s.filter.cap {
			s.filter.grow()
		}
		s.filter.f.Add(fp[:])
		s.filter.n++
	}
}

// buildFilter builds the filter from the fingerprints on disk and those
// not yet written: sized for at least MinFilterCapacity, it reads the
// disk in one pass, adding as it goes. A
// pass that finds more than three quarters of that capacity starts over,
// twice as large (so a resumed job reads at most about twice what one
// pass reads, and no list of the fingerprints is held in memory). s.mu is
// held.
func (s *Set) buildFilter() error {
	mem := uint(len(s.pending) + len(s.inBatch))
	c := max(minFilterCapacity, 2*mem)
	builds := s.filter.builds + 1
	for {
		f := setFilter{f: bloom.NewWithEstimates(c, filterFalsePositives), cap: c, fp: filterFalsePositives, builds: builds}
		full, err := s.fillFilter(&f)
		if err != nil {
			return err
		}
		if full {
			c *= 2
			continue
		}
		for fp := range s.pending {
			f.f.Add(fp[:])
			f.n++
		}
		for fp := range s.inBatch {
			f.f.Add(fp[:])
			f.n++
		}
		s.filter = f
		return nil
	}
}

// fillFilter adds the fingerprints on disk to f, and reports whether it
// stopped because they, with those in memory, reach three quarters of
// f's capacity.
func (s *Set) fillFilter(f *setFilter) (full bool, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(s.prefix), UpperBound: prefixEnd([]byte(s.prefix))})
	if err != nil {
		return false, fmt.Errorf("pebbleq: dupefilter: reading the fingerprints: %w", err)
	}
	limit := f.cap*3/4 - min(f.cap*3/4, uint(len(s.pending)+len(s.inBatch)))
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[len(s.prefix):]
		if len(k) != len(dupefilter.Fingerprint{}) {
			it.Close()
			return false, fmt.Errorf("%w: fingerprint key of %d bytes", ErrCorrupt, len(k))
		}
		if f.n >= limit {
			full = true
			break
		}
		f.f.Add(k)
		f.n++
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return false, fmt.Errorf("pebbleq: dupefilter: reading the fingerprints: %w", err)
	}
	return full, nil
}
