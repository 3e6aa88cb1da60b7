package downloader

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Kind is a kind of download error. Settings such as BACKOFF_EXCEPTIONS and
// RETRY_EXCEPTIONS name kinds as strings; errors.Is(err, kind) tells whether
// an error is of a kind.
type Kind struct{ name string }

// NewKind returns a new error kind; register it with RegisterKind to make it
// usable by name in settings.
func NewKind(name string) *Kind { return &Kind{name: name} }

// Error returns the kind's name.
func (k *Kind) Error() string { return k.name }

// Name returns the kind's name, as used in settings.
func (k *Kind) Name() string { return k.name }

// The built-in download error kinds.
var (
	// ErrDownloadFailed: the connection could not be made or broke: refused,
	// reset, DNS failure, TLS failure, protocol error.
	ErrDownloadFailed = NewKind("DownloadFailedError")
	// ErrDownloadTimeout: DOWNLOAD_TIMEOUT (or the download_timeout meta)
	// elapsed before the body was complete.
	ErrDownloadTimeout = NewKind("DownloadTimeoutError")
	// ErrResponseDataLoss: the body ended before Content-Length bytes.
	ErrResponseDataLoss = NewKind("ResponseDataLossError")
	// ErrResponseTooLarge: the body, after decompression, exceeded
	// DOWNLOAD_MAXSIZE (or the download_maxsize meta); the download was
	// cancelled at the limit.
	ErrResponseTooLarge = NewKind("ResponseTooLargeError")
)

var (
	kindsMu sync.RWMutex
	kinds   = map[string]error{}
)

func init() {
	for _, k := range []*Kind{ErrDownloadFailed, ErrDownloadTimeout, ErrResponseDataLoss, ErrResponseTooLarge} {
		RegisterKind(k.name, k)
	}
}

// RegisterKind makes target usable by name in settings that list error
// kinds: an error matches when errors.Is(err, target). Registering a name
// twice replaces the earlier target.
func RegisterKind(name string, target error) {
	kindsMu.Lock()
	kinds[name] = target
	kindsMu.Unlock()
}

// LookupKind returns the error registered under name.
func LookupKind(name string) (error, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// KindNames returns every registered kind name, sorted.
func KindNames() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ResolveKinds turns a list of kind names (from a setting) into errors to
// match with errors.Is, or an error naming the first unknown one.
func ResolveKinds(setting string, names []string) ([]error, error) {
	out := make([]error, 0, len(names))
	for _, n := range names {
		k, ok := LookupKind(n)
		if !ok {
			return nil, fmt.Errorf("%s: unknown error kind %q (known: %v; register others with downloader.RegisterKind)", setting, n, KindNames())
		}
		out = append(out, k)
	}
	return out, nil
}

// KindOf returns the name of the first registered kind err matches, or "".
// Stats use it to count errors by kind.
func KindOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind.name
	}
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	for n, k := range kinds {
		if errors.Is(err, k) {
			return n
		}
	}
	return ""
}

// Error is a failed download.
type Error struct {
	// Kind classifies the failure.
	Kind *Kind
	// URL is the request URL.
	URL string
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s: %v", e.Kind.name, e.URL, e.Err) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }
