package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// Store keeps the pool's sessions between runs (JOBDIR) or between
// processes (a shared store). Load is called once when the pool opens;
// Save receives the sessions changed since the last Save and the IDs of
// those retired meanwhile. Implementations must be safe for concurrent use.
type Store interface {
	Load(ctx context.Context) ([]Record, error)
	Save(ctx context.Context, changed []Record, retired []string) error
	Close() error
}

// MemoryStore keeps sessions in memory: the default without JOBDIR.
type MemoryStore struct {
	mu   sync.Mutex
	recs map[string]Record
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{recs: map[string]Record{}} }

// Load implements Store.
func (m *MemoryStore) Load(context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sorted(m.recs), nil
}

// Save implements Store.
func (m *MemoryStore) Save(_ context.Context, changed []Record, retired []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range changed {
		m.recs[r.ID] = r
	}
	for _, id := range retired {
		delete(m.recs, id)
	}
	return nil
}

// Close implements Store.
func (m *MemoryStore) Close() error { return nil }

func sorted(m map[string]Record) []Record {
	out := make([]Record, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// FileStore keeps sessions in one JSON file, replaced atomically (written
// to a temporary file, synced, renamed) on every Save, so a crash leaves
// either the previous or the new state. With JOBDIR the file is
// JOBDIR/sessions.json.
type FileStore struct {
	path string
	mu   sync.Mutex
	recs map[string]Record
}

// fileFormat is the file's layout, versioned for later changes.
type fileFormat struct {
	Version  int      `json:"version"`
	Sessions []Record `json:"sessions"`
}

// OpenFileStore opens the store at path; a missing file is an empty store,
// a file that does not parse is an error naming it.
func OpenFileStore(path string) (*FileStore, error) {
	f := &FileStore{path: path, recs: map[string]Record{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	var ff fileFormat
	if err := json.Unmarshal(b, &ff); err != nil {
		return nil, fmt.Errorf("sessions: %s is not a sessions file: %v", path, err)
	}
	if ff.Version != 1 {
		return nil, fmt.Errorf("sessions: %s has version %d; this gocrawl reads version 1", path, ff.Version)
	}
	for _, r := range ff.Sessions {
		f.recs[r.ID] = r
	}
	return f, nil
}

// Load implements Store.
func (f *FileStore) Load(context.Context) ([]Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sorted(f.recs), nil
}

// Save implements Store.
func (f *FileStore) Save(_ context.Context, changed []Record, retired []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range changed {
		f.recs[r.ID] = r
	}
	for _, id := range retired {
		delete(f.recs, id)
	}
	b, err := json.MarshalIndent(fileFormat{Version: 1, Sessions: sorted(f.recs)}, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".sessions-*.tmp")
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	_, werr := tmp.Write(b)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), f.path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("sessions: writing %s: %w", f.path, werr)
	}
	return nil
}

// Close implements Store.
func (f *FileStore) Close() error { return nil }
