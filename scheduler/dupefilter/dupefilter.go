// Package dupefilter drops requests the crawl has already seen.
//
// A request is identified by its Fingerprint: a 16-byte hash of its method,
// its canonical URL (scheme and host lower-cased, default port dropped,
// query parameters sorted, fragment dropped) and its body. Fingerprints are
// kept in a Set: in memory by default (MemorySet), or in the crawl's
// persistent storage (on disk with JOBDIR). The Filter puts the two together with the
// request's DontFilter flag, the DUPEFILTER_DEBUG setting and the
// dupefilter/filtered stat.
package dupefilter

import (
	"context"
	"encoding/hex"
	"sync"
)

// Fingerprint identifies a request for duplicate detection. It is compact
// (16 bytes) so that millions fit in memory or on disk.
type Fingerprint [16]byte

// String returns the fingerprint in hexadecimal.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// Set records the fingerprints a crawl has seen. Implementations are safe
// for concurrent use; persistent ones keep fingerprints across runs of a
// job.
type Set interface {
	// Add records fp and reports whether it was already present.
	Add(ctx context.Context, fp Fingerprint) (seen bool, err error)
	// Len returns the number of fingerprints recorded.
	Len() int
	// Close releases the set; a persistent set keeps its fingerprints.
	Close(ctx context.Context) error
}

// Forgetter is implemented by sets that can take a fingerprint back: the
// scheduler forgets the fingerprint of a request it recorded but then could
// not queue (unpersistable, invalid scopes), so that a later valid request
// for the same resource is not dropped as a duplicate of nothing.
type Forgetter interface {
	Forget(ctx context.Context, fp Fingerprint) error
}

// MemorySet is a Set kept in a Go map: about 40 bytes per fingerprint
// (see docs/performance.md), lost when the process ends.
type MemorySet struct {
	mu sync.Mutex
	m  map[Fingerprint]struct{}
}

// NewMemorySet returns an empty MemorySet.
func NewMemorySet() *MemorySet { return &MemorySet{m: map[Fingerprint]struct{}{}} }

// Add implements Set.
func (s *MemorySet) Add(ctx context.Context, fp Fingerprint) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[fp]; ok {
		return true, nil
	}
	s.m[fp] = struct{}{}
	return false, nil
}

// Forget implements Forgetter.
func (s *MemorySet) Forget(ctx context.Context, fp Fingerprint) error {
	s.mu.Lock()
	delete(s.m, fp)
	s.mu.Unlock()
	return nil
}

// Len implements Set.
func (s *MemorySet) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Close implements Set; the fingerprints stay in memory.
func (s *MemorySet) Close(ctx context.Context) error { return nil }
