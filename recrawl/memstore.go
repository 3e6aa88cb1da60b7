package recrawl

import (
	"context"
	"slices"
	"sync"
)

// MemoryStore is a Store in memory: the records of a continuous crawl
// without a job, and tests. It is safe for concurrent use.
type MemoryStore struct {
	mu    sync.Mutex
	recs  map[string]Record
	round Round
	known bool
	// Legacy makes Round report a job written before records existed.
	Legacy bool
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{recs: map[string]Record{}} }

// Get implements Store.
func (m *MemoryStore) Get(_ context.Context, key string) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[key]
	return r, ok, nil
}

// Put implements Store.
func (m *MemoryStore) Put(_ context.Context, key string, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[key] = r
	return nil
}

// Each implements Store.
func (m *MemoryStore) Each(ctx context.Context, fn func(string, Record) error) error {
	m.mu.Lock()
	keys := make([]string, 0, len(m.recs))
	for k := range m.recs {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	slices.Sort(keys)
	for _, k := range keys {
		r, ok, _ := m.Get(ctx, k)
		if !ok {
			continue
		}
		if err := fn(k, r); err != nil {
			return err
		}
	}
	return nil
}

// Len returns the number of records.
func (m *MemoryStore) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

// Round implements Store.
func (m *MemoryStore) Round(context.Context) (Round, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.known {
		return Round{Legacy: m.Legacy}, false, nil
	}
	return m.round, true, nil
}

// BeginRound implements Store.
func (m *MemoryStore) BeginRound(_ context.Context, legacy bool) (Round, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, begun := NextRound(m.round, m.known, legacy)
	m.round, m.known = r, true
	return r, begun, nil
}

// SaveRound implements Store.
func (m *MemoryStore) SaveRound(_ context.Context, r Round) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.known && m.round.N == r.N {
		m.round = r
	}
	return nil
}

// NextRound is BeginRound's rule, for stores. A job with no round
// recorded (known false) begins round 0, its first crawl, or round 1
// when it is legacy (written before records existed: its first crawl is
// over). A known round under way stays; a done one is followed by the
// next.
func NextRound(cur Round, known, legacy bool) (Round, bool) {
	switch {
	case !known && legacy:
		return Round{N: 1, Legacy: true}, true
	case !known:
		return Round{}, true
	case !cur.Done:
		return cur, false
	}
	return Round{N: cur.N + 1}, true
}
