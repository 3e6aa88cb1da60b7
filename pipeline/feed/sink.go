package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/gocrawl/gocrawl/internal/redact"
)

// This file is the registry of item sinks: feeds that hand items to a
// database rather than write bytes to a file. A sink package (such as
// pipeline/feed/pgsink or pipeline/feed/sqlitesink) registers an opener
// for its URI scheme in an init function; a feed whose target is a URI
// with that scheme (`-o postgresql://...`, a FEEDS key) then goes to the
// sink. The feed package batches, buffers and retries (sinkfeed.go); the
// sink only stores batches.

// Record is one item as a sink receives it: the exported JSON object
// (after the feed's fields filter) and its top-level fields in order.
type Record struct {
	// JSON is the item as a compact JSON object.
	JSON []byte
	// Fields are its top-level fields, in order.
	Fields []Field
}

// Field is one top-level field of an item.
type Field struct {
	// Name is the field's JSON name (a struct's json tag, a map's key).
	Name string
	// Value is the field's value as JSON.
	Value json.RawMessage
}

// Get returns the value of the field called name and whether the record
// has it.
func (r Record) Get(name string) (json.RawMessage, bool) {
	for _, f := range r.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Sink stores items somewhere other than a file (a database table). Its
// methods are called by one goroutine at a time.
type Sink interface {
	// Check verifies, before the crawl starts, that items can be stored:
	// the server answers, the credentials are accepted, the table exists
	// or may be created, rows may be written. The command line exits with
	// status 2 on an error; the error must not hold a password.
	Check(ctx context.Context) error
	// Write stores batch, all of it or none, replacing the rows that have
	// the same key (so that writing a batch twice stores it once). An
	// error of kind ErrUnavailable (the server is away) is retried with
	// backoff; any other error stops the crawl.
	Write(ctx context.Context, batch []Record) error
	// Close releases the connection.
	Close() error
}

// Validator is implemented by sinks that can tell at once that an item
// cannot be stored (it lacks a key field): ProcessItem then drops the item
// with an error of kind ErrItem, as it does an item that cannot be
// encoded, instead of stopping the crawl at the write.
type Validator interface {
	Validate(Record) error
}

// SinkOpener returns the sink of a target URI. The URI's query holds the
// sink's own parameters (table, key...); options given in FEEDS are added
// to it. Bad parameters are reported here, before anything connects.
type SinkOpener func(target *url.URL) (Sink, error)

// ErrUnavailable is the kind of error a Sink's Write returns while its
// server cannot be reached: the feed keeps the batch and retries.
var ErrUnavailable = errors.New("sink unavailable")

// ErrSink is the kind of error for a sink target that cannot be used: an
// unknown scheme, a bad URI or parameter, an unreachable server, refused
// credentials or a missing permission.
var ErrSink = errors.New("item sink")

var sinks = struct {
	sync.RWMutex
	m map[string]SinkOpener
}{m: map[string]SinkOpener{}}

// RegisterSink makes targets with the URI scheme (lower case, such as
// "postgresql") go to the sink that open returns. It panics when the
// scheme is registered twice; call it from an init function.
func RegisterSink(scheme string, open SinkOpener) {
	scheme = strings.ToLower(scheme)
	sinks.Lock()
	defer sinks.Unlock()
	if _, dup := sinks.m[scheme]; dup {
		panic("feed: sink scheme " + scheme + " registered twice")
	}
	sinks.m[scheme] = open
}

// SinkSchemes lists the registered sink schemes, sorted.
func SinkSchemes() []string {
	sinks.RLock()
	defer sinks.RUnlock()
	out := make([]string, 0, len(sinks.m))
	for s := range sinks.m {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// IsSink reports whether target is a URI whose scheme names a registered
// sink.
func IsSink(target string) bool {
	_, ok := sinkOpener(target)
	return ok
}

// sinkScheme returns the scheme of a target that looks like a URI
// ("scheme://..."), lower case.
func sinkScheme(target string) (string, bool) {
	scheme, _, ok := strings.Cut(target, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, `/\ .`) {
		return "", false
	}
	return strings.ToLower(scheme), true
}

func sinkOpener(target string) (SinkOpener, bool) {
	scheme, ok := sinkScheme(target)
	if !ok {
		return nil, false
	}
	sinks.RLock()
	defer sinks.RUnlock()
	open, ok := sinks.m[scheme]
	return open, ok
}

// openSink parses target, adds params to its query and opens its sink.
func openSink(target string, params map[string]string) (Sink, string, error) {
	open, ok := sinkOpener(target)
	if !ok {
		return nil, redact.String(target), fmt.Errorf("%w: no sink for %q", ErrSink, target)
	}
	u, err := url.Parse(target)
	if err != nil {
		// url's error quotes the URI, password included.
		return nil, "", fmt.Errorf("%w: %s is not a valid URI", ErrSink, redactedScheme(target))
	}
	name := sinkName(u)
	if len(params) > 0 {
		q := u.Query()
		for k, v := range params {
			if q.Has(k) {
				return nil, name, fmt.Errorf("%w %s: %s is given both in the URI and as a feed option", ErrSink, name, k)
			}
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}
	s, err := open(u)
	if err != nil {
		return nil, name, fmt.Errorf("%w %s: %w", ErrSink, name, err)
	}
	return s, name, nil
}

// sinkName is u for messages and keys: its password hidden, in the
// userinfo or as a password parameter.
func sinkName(u *url.URL) string {
	c := *u
	if q := c.Query(); q.Has("password") {
		q.Set("password", redact.Mask)
		c.RawQuery = q.Encode()
	}
	return redact.URL(&c)
}

// redactedScheme names a target that does not parse without showing it.
func redactedScheme(target string) string {
	scheme, _ := sinkScheme(target)
	return "the " + scheme + ":// target"
}
