package httpcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/gocrawl/gocrawl/internal/pebblefatal"
	"github.com/gocrawl/gocrawl/internal/privfs"
	"github.com/gocrawl/gocrawl/spider"
)

// Meta is what is stored about a response besides its body: enough for a
// policy to decide freshness without reading the body.
type Meta struct {
	// URL is the response URL.
	URL string
	// Status is the HTTP status.
	Status int
	// Header holds the response headers.
	Header http.Header
	// Stored is when the response was stored (or last revalidated).
	Stored time.Time
}

// Entry is a stored response.
type Entry struct {
	Meta
	Body []byte
}

// Response rebuilds the stored response as the answer to req, flagged
// "cached".
func (e *Entry) Response(req *spider.Request) *spider.Response {
	u := req.URL
	if p, err := url.Parse(e.URL); err == nil && e.URL != "" {
		u = p
	}
	return &spider.Response{URL: u, Status: e.Status, Header: e.Header.Clone(), Body: e.Body,
		Request: req, Flags: []string{"cached"}}
}

// Store is a Pebble database of responses keyed by request fingerprint.
// It is safe for concurrent use.
type Store struct {
	db      *pebble.DB
	breaker pebblefatal.Breaker // after a fatal write error, writes fail at once
}

// StoreOptions configure Open.
type StoreOptions struct {
	// FS replaces the operating system's file system (tests use
	// vfs.NewMem()).
	FS vfs.FS
}

// Open opens (creating it if needed) the cache database in dir.
func Open(dir string, o StoreOptions) (*Store, error) {
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

// Fingerprint identifies a request in the cache: its method, canonical URL
// (host lower-cased, default port and fragment dropped, query parameters
// sorted) and body. Headers are not part of it.
func Fingerprint(req *spider.Request) string {
	h := sha256.New()
	io.WriteString(h, req.EffectiveMethod())
	h.Write([]byte{0})
	io.WriteString(h, CanonicalURL(req.URL))
	h.Write([]byte{0})
	h.Write(req.Body)
	return hex.EncodeToString(h.Sum(nil))
}

// CanonicalURL is u with scheme and host lower-cased, the default port and
// fragment dropped and query parameters sorted by name.
func CanonicalURL(u *url.URL) string {
	c := *u
	c.Scheme = lower(c.Scheme)
	c.Host = spider.HostKey(u)
	c.Fragment, c.RawFragment = "", ""
	c.User = nil
	if c.RawQuery != "" {
		if q, err := url.ParseQuery(c.RawQuery); err == nil {
			c.RawQuery = q.Encode()
		}
	}
	return c.String()
}

func lower(s string) string { return string(bytes.ToLower([]byte(s))) }

func metaKey(fp string) []byte { return []byte("m/" + fp) }
func bodyKey(fp string) []byte { return []byte("b/" + fp) }

// ErrNotFound is returned for requests with nothing stored.
var ErrNotFound = errors.New("not in the HTTP cache")

// Meta returns what is stored about fingerprint fp, without the body.
func (s *Store) Meta(fp string) (*Meta, error) {
	v, closer, err := s.db.Get(metaKey(fp))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	var m Meta
	if err := gob.NewDecoder(bytes.NewReader(v)).Decode(&m); err != nil {
		return nil, fmt.Errorf("HTTP cache entry %s is corrupt: %w", fp, err)
	}
	return &m, nil
}

// Get returns the entry stored for fp.
func (s *Store) Get(fp string) (*Entry, error) {
	m, err := s.Meta(fp)
	if err != nil {
		return nil, err
	}
	v, closer, err := s.db.Get(bodyKey(fp))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return &Entry{Meta: *m, Body: bytes.Clone(v)}, nil
}

// Put stores e under fp. Writes are not synced: a cache may lose its last
// entries in a crash, never its consistency.
func (s *Store) Put(fp string, e *Entry) error {
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
func (s *Store) PutMeta(fp string, m *Meta) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(m); err != nil {
		return err
	}
	return s.write(func() error { return s.db.Set(metaKey(fp), buf.Bytes(), pebble.NoSync) })
}

// write runs fn, a write to the database, through the breaker: after a
// fatal write error (a full disk) every write fails at once.
func (s *Store) write(fn func() error) error { return s.breaker.Do("HTTP cache", fn) }
