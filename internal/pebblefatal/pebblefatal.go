// Package pebblefatal turns Pebble's fatal errors into errors that gocrawl
// can report.
//
// Pebble calls its Logger's Fatalf when a write cannot be committed, for
// instance on a full disk ("pebble: fatal commit error: ... no space left
// on device"), and relies on Fatalf not returning; once its write-ahead
// log has failed, later writes panic with the log's error, sometimes while
// holding the database's commit lock. So after one such failure the
// database must not be written again: every later write would block
// forever.
//
// A Breaker guards one database. Every write goes through Breaker.Do,
// which recovers these panics into an error of kind ErrFatal, remembers
// the first one, and fails every later write at once without touching the
// database. Use Breaker.Logger as pebble.Options.Logger: its Fatalf panics
// when called under Do (to be recovered there), and on Pebble's own
// background goroutines records the error in the Breaker and parks the
// goroutine, as Pebble expects, instead of crashing the process. The crawl
// then stops with a clear message and exit status 1; what was committed
// before the failure is on disk, and a later run resumes from there.
package pebblefatal

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
)

// ErrFatal is the kind of every *Error, for errors.Is.
var ErrFatal = errors.New("database write failed")

// Error is a fatal Pebble error turned into an error.
type Error struct {
	// Msg is Pebble's message.
	Msg string
	// Err is the underlying error when Pebble panicked with one (the log's
	// write error, such as ENOSPC), else nil.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFatal) true.
func (e *Error) Is(target error) bool { return target == ErrFatal }

// Breaker guards the writes to one database. The zero value is ready; it
// is safe for concurrent use.
type Breaker struct {
	err atomic.Pointer[error]
}

// Err returns the error that broke the database, or nil.
func (b *Breaker) Err() error {
	if p := b.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Do runs fn, a write to the database. A fatal Pebble error (see the
// package doc) becomes an error "<what>: <Pebble's message>" of kind
// ErrFatal, and breaks b: from then on Do returns the first such error at
// once, without calling fn.
func (b *Breaker) Do(what string, fn func() error) (err error) {
	if err := b.Err(); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			e, ok := FromPanic(v)
			if !ok {
				panic(v)
			}
			failed := fmt.Errorf("%s: %w", what, e)
			b.err.CompareAndSwap(nil, &failed)
			err = failed // a variable of its own: err stays on the stack
		}
	}()
	return fn()
}

// Fail breaks b with err, a failure as fatal as Pebble's own (the job's
// fsync of the write-ahead log failed: what was written may not be on the
// disk, and retrying cannot tell). It returns the error "<what>: <err>" of
// kind ErrFatal, or the error that broke b first.
func (b *Breaker) Fail(what string, err error) error {
	var e error = fmt.Errorf("%s: %w", what, &Error{Msg: err.Error(), Err: err})
	if b.err.CompareAndSwap(nil, &e) {
		return e
	}
	return b.Err()
}

// Logger returns a pebble.Logger for the database b guards: it drops
// Pebble's informational messages and handles Fatalf as the package doc
// says.
func (b *Breaker) Logger() Logger { return Logger{b: b} }

// Logger is the pebble.Logger of a Breaker.
type Logger struct{ b *Breaker }

// Infof implements pebble.Logger; it drops the message.
func (Logger) Infof(string, ...any) {}

// Errorf implements pebble.Logger; it drops the message (errors that
// matter reach the caller).
func (Logger) Errorf(string, ...any) {}

// Fatalf implements pebble.Logger. On one of Pebble's own background
// goroutines (a flush or compaction whose MANIFEST write failed) it breaks
// the Breaker and never returns, as Pebble expects: writes then fail in
// Do. Anywhere else it panics with an *Error, which Do recovers (outside
// Do, such a panic is a crash, as Pebble's own logger would exit).
func (l Logger) Fatalf(format string, args ...any) {
	e := &Error{Msg: fmt.Sprintf(format, args...)}
	if l.b == nil || !pebbleGoroutine() {
		panic(e)
	}
	var err error = fmt.Errorf("background work: %w", e)
	l.b.err.CompareAndSwap(nil, &err)
	select {} // parked for good; the database is unusable
}

// pebbleGoroutine reports whether the calling goroutine was started by
// Pebble (its outermost function is Pebble's).
func pebbleGoroutine() bool {
	pcs := make([]uintptr, 512)
	n := runtime.Callers(2, pcs)
	if n == len(pcs) {
		return false // too deep to tell: treat it as a caller's
	}
	frames := runtime.CallersFrames(pcs[:n])
	outer := ""
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			outer = f.Function
		}
		if !more {
			break
		}
	}
	return strings.Contains(outer, "github.com/cockroachdb/pebble")
}

// FromPanic returns the *Error for a recovered panic value v, and false
// when v is neither an *Error nor an error (a bug elsewhere: let it
// crash).
func FromPanic(v any) (*Error, bool) {
	switch x := v.(type) {
	case *Error:
		return x, true
	case error:
		return &Error{Msg: "pebble: write failed: " + x.Error(), Err: x}, true
	}
	return nil, false
}
