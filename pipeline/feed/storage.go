package feed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/settings"
)

// This file is where a feed's bytes go when its path is a URI such as
// s3://bucket/prefix/items-%(time)s.jsonl.gz rather than a local file: a
// Storage, found by the URI's scheme among the registered ones. The
// Exporter encodes items exactly as for a file and writes the bytes to
// the storage; resuming a job (JOBDIR) works the same way, by offsets.
// Storages that need a heavy client library (the AWS SDK for s3://) live
// in packages of their own that register themselves, so this package and
// the engine link none: `gocrawl` links pipeline/feed/s3feed.

// Storage receives the bytes of one feed. The Exporter calls Open once,
// then Write as items arrive (from one goroutine at a time), Sync on each
// Flush, and Close at the end. A Storage that supports resuming keeps
// what it needs (in JOBDIR) to continue the feed where an earlier run of
// the same job left it.
type Storage interface {
	// Check reports, before the crawl starts and without writing, whether
	// the destination can be written: a missing bucket, refused
	// credentials or an unreachable endpoint. Its error names the problem
	// and never holds a secret.
	Check(ctx context.Context) error
	// Open prepares the destination. With info.Resume it continues the
	// feed an earlier run of the job wrote, keeping its first
	// info.Offset bytes, and returns them (the Exporter reads the CSV
	// header and the last bytes of a JSON array); otherwise it starts a
	// new feed and returns empty content.
	Open(ctx context.Context, info OpenInfo) (Content, error)
	// Write appends p to the feed.
	Write(p []byte) (int, error)
	// Truncate drops the bytes after n, which is at least the offset Open
	// resumed at.
	Truncate(n int64) error
	// Sync is called after the Exporter's Flush with the feed's Offset,
	// which a job is about to record as the point a resume continues at.
	Sync(offset int64) error
	// Close finishes the feed and makes it visible as a whole (an object
	// store completes its upload). When it fails, what was written is
	// kept for a later run to finish, and the error says where.
	Close(ctx context.Context) error
}

// Content is the bytes a feed already holds, with random access.
type Content interface {
	Size() int64
	ReadAt(p []byte, off int64) (int, error)
}

// OpenInfo is what a Storage's Open is told.
type OpenInfo struct {
	// Spider is the crawl's spider name, for the %(name)s placeholder
	// ("" when unknown).
	Spider string
	// Time is the crawl's start, for the %(time)s placeholder.
	Time time.Time
	// Resume continues an earlier run's feed at Offset.
	Resume bool
	Offset int64
}

// StorageFunc returns the storage of uri, reading its options from s (nil:
// the defaults). A bad URI or option is an error naming it.
type StorageFunc func(uri string, s *settings.Settings) (Storage, error)

var storages struct {
	sync.RWMutex
	m map[string]StorageFunc
}

// RegisterStorage makes feeds whose path starts with scheme:// use the
// storage fn returns. Packages call it from init; registering a scheme
// twice panics.
func RegisterStorage(scheme string, fn StorageFunc) {
	storages.Lock()
	defer storages.Unlock()
	if storages.m == nil {
		storages.m = map[string]StorageFunc{}
	}
	if _, dup := storages.m[scheme]; dup {
		panic("feed: storage " + scheme + " registered twice")
	}
	storages.m[scheme] = fn
}

// ErrStorage is the kind of error for a feed URI no registered storage
// serves.
var ErrStorage = errors.New("no feed storage for this URI")

// schemeOf returns the scheme of a path written as scheme://..., or "".
func schemeOf(path string) string {
	scheme, _, ok := strings.Cut(path, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, `/\. `) {
		return ""
	}
	return strings.ToLower(scheme)
}

// storageFor returns the storage of path when path is a URI, nil for a
// local file.
func storageFor(path string, s *settings.Settings) (Storage, error) {
	scheme := schemeOf(path)
	if scheme == "" {
		return nil, nil
	}
	storages.RLock()
	fn := storages.m[scheme]
	known := slices.Sorted(maps.Keys(storages.m))
	storages.RUnlock()
	if fn == nil {
		// Neither a storage (bytes of a formatted feed) nor an item sink
		// (New sends those first): name every scheme this program has.
		known = append(known, SinkSchemes()...)
		slices.Sort(known)
		if len(known) == 0 {
			return nil, fmt.Errorf("%w %q: this program links no feed storage or item sink (the gocrawl command links s3://, postgresql:// and sqlite://)", ErrStorage, path)
		}
		return nil, fmt.Errorf("%w %q: the feed URIs this program takes are %s://", ErrStorage, path, strings.Join(known, ":// "))
	}
	if s == nil {
		s = settings.New()
	}
	return fn(path, s)
}

// stripGzip returns path without a final .gz and whether it had one.
func stripGzip(path string) (string, bool) {
	if base, ok := strings.CutSuffix(path, ".gz"); ok {
		return base, true
	}
	return path, false
}

// ExpandPlaceholders replaces Scrapy's feed URI placeholders in uri:
// %(name)s by the spider's name and %(time)s by t in UTC, written
// 2006-01-02T15-04-05 (no colons, which object keys and file names handle
// badly). Other text is left as is.
func ExpandPlaceholders(uri, spider string, t time.Time) string {
	return strings.NewReplacer(
		"%(name)s", spider,
		"%(time)s", t.UTC().Format("2006-01-02T15-04-05"),
	).Replace(uri)
}

// HasPlaceholders reports whether uri holds %(name)s or %(time)s.
func HasPlaceholders(uri string) bool {
	return strings.Contains(uri, "%(name)s") || strings.Contains(uri, "%(time)s")
}

// NewStorage returns an exporter writing to st, a storage built by the
// program (s3feed.New with its own Config, say) rather than found by a
// URI's scheme. path names the feed: it keys the offset a job saves, and
// gives the format when opts.Format is empty (a final .gz is ignored).
func NewStorage(path string, st Storage, opts Options) (*Exporter, error) {
	if st == nil {
		return nil, errors.New("feed: nil storage")
	}
	if opts.Format == "" {
		named, _ := stripGzip(path)
		f, err := FormatFromPath(named)
		if err != nil {
			return nil, err
		}
		opts.Format = f
	} else if _, err := ParseFormat(string(opts.Format)); err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, fmt.Errorf("feed %s: %w", path, err)
	}
	return &Exporter{path: path, st: st, opts: opts}, nil
}
