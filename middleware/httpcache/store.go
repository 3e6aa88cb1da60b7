package httpcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

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

// Store keeps responses by request fingerprint (Fingerprint); it is safe
// for concurrent use. Package pebblecache keeps them in a Pebble database
// and registers its opener (RegisterOpener) when it is imported.
type Store interface {
	// Meta returns what is stored about fp, without the body, or an
	// error wrapping ErrNotFound.
	Meta(fp string) (*Meta, error)
	// Get returns the entry stored for fp, or an error wrapping
	// ErrNotFound.
	Get(fp string) (*Entry, error)
	// Put stores e under fp.
	Put(fp string, e *Entry) error
	// PutMeta replaces the metadata of fp, keeping its body (after a 304).
	PutMeta(fp string, m *Meta) error
	// Close closes the store.
	Close() error
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

// ErrNotFound is returned for requests with nothing stored.
var ErrNotFound = errors.New("not in the HTTP cache")

// Opener opens a Store in dir, creating it if needed.
type Opener func(dir string) (Store, error)

var (
	openerMu sync.Mutex
	opener   Opener
)

// RegisterOpener makes f the way Open opens stores; package pebblecache
// calls it when it is imported.
func RegisterOpener(f Opener) {
	openerMu.Lock()
	opener = f
	openerMu.Unlock()
}

// StoreImport is the package whose import registers the store on disk.
const StoreImport = "github.com/gocrawl/gocrawl/middleware/httpcache/pebblecache"

// ErrNoStore is the kind of the error of Open in a program that imported
// no store.
var ErrNoStore = errors.New("no HTTP cache store linked into this program")

// Open opens the store in dir with the registered opener. Without one the
// error wraps ErrNoStore and names the package to import.
func Open(dir string) (Store, error) {
	openerMu.Lock()
	f := opener
	openerMu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("HTTPCACHE_ENABLED: %w; add the import\n\timport _ %q\nto the program (the gocrawl command and cli.Main programs have it)", ErrNoStore, StoreImport)
	}
	return f(dir)
}
