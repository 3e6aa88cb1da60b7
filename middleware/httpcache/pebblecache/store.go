// Package pebblecache is the HTTP cache's store on disk: a Pebble
// database of responses keyed by request fingerprint, one per spider under
// HTTPCACHE_DIR. Importing it registers its opener with package
// httpcache, which the HttpCache middleware opens when HTTPCACHE_ENABLED
// is set; the gocrawl command and every cli.Main program import it.
package pebblecache

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/gocrawl/gocrawl/internal/pebblefatal"
	"github.com/gocrawl/gocrawl/internal/privfs"
	"github.com/gocrawl/gocrawl/middleware/httpcache"
)

func init() {
	httpcache.RegisterOpener(func(dir string) (httpcache.Store, error) { return Open(dir, Options{}) })
}

// Store is a Pebble database of responses keyed by request fingerprint
// (an httpcache.Store). It is safe for concurrent use.
type Store struct {
	db      *pebble.DB
	breaker pebblefatal.Breaker // after a fatal write error, writes fail at once
}

// Options configure Open.
type Options struct {
	// FS replaces the operating system's file system (tests use
	// vfs.NewMem()).
	FS vfs.FS
}

// Open opens (creating it if needed) the cache database in dir.
func Open(dir string, o Options) (*Store, error) {
	// The cache holds Set-Cookie values and pages behind logins: private
	// to the user (folders 0700, files 0600).
	s := &Store{}
	opts := &pebble.Options{Logger: s.breaker.Logger(), FS: privfs.FS(o.FS)}
	if o.FS == nil {
		if _, err := privfs.MkdirAll(dir); err != nil {
			return nil, fmt.Errorf("HTTP cache folder %s: %w", dir, err)
		}
	}
	var db *pebble.DB
	err := s.breaker.Do("opening", func() (err error) {
		db, err = pebble.Open(dir, opts)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("opening HTTP cache in %s: %w", dir, err)
	}
	s.db = db
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	if s.breaker.Err() != nil {
		return nil // broken by a failed write, reported then; closing would block
	}
	return s.breaker.Do("HTTP cache", s.db.Close)
}

func metaKey(fp string) []byte { return []byte("m/" + fp) }
func bodyKey(fp string) []byte { return []byte("b/" + fp) }

// Meta returns what is stored about fingerprint fp, without the body.
func (s *Store) Meta(fp string) (*httpcache.Meta, error) {
	v, closer, err := s.db.Get(metaKey(fp))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, httpcache.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	var m httpcache.Meta
	if err := gob.NewDecoder(bytes.NewReader(v)).Decode(&m); err != nil {
		return nil, fmt.Errorf("HTTP cache entry %s is corrupt: %w", fp, err)
	}
	return &m, nil
}

// Get returns the entry stored for fp.
func (s *Store) Get(fp string) (*httpcache.Entry, error) {
	m, err := s.Meta(fp)
	if err != nil {
		return nil, err
	}
	v, closer, err := s.db.Get(bodyKey(fp))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, httpcache.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return &httpcache.Entry{Meta: *m, Body: bytes.Clone(v)}, nil
}

// Put stores e under fp. Writes are not synced: a cache may lose its last
// entries in a crash, never its consistency.
func (s *Store) Put(fp string, e *httpcache.Entry) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&e.Meta); err != nil {
		return err
	}
	return s.write(func() error {
		b := s.db.NewBatch()
		defer b.Close()
		if err := b.Set(bodyKey(fp), e.Body, nil); err != nil {
			return err
		}
		if err := b.Set(metaKey(fp), buf.Bytes(), nil); err != nil {
			return err
		}
		return b.Commit(pebble.NoSync)
	})
}

// PutMeta replaces the metadata of fp, keeping its body (after a 304).
func (s *Store) PutMeta(fp string, m *httpcache.Meta) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(m); err != nil {
		return err
	}
	return s.write(func() error { return s.db.Set(metaKey(fp), buf.Bytes(), pebble.NoSync) })
}

// write runs fn, a write to the database, through the breaker: after a
// fatal write error (a full disk) every write fails at once.
func (s *Store) write(fn func() error) error { return s.breaker.Do("HTTP cache", fn) }
