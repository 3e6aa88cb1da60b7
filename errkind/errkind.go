// Package errkind names the kinds of download errors, so that settings can
// refer to them by name and code can test for them with errors.Is.
//
// BACKOFF_EXCEPTIONS (which errors slow a throttling scope down) and
// RETRY_EXCEPTIONS (which errors the Retry middleware retries) list kind
// names, as Scrapy's settings list exception classes. The downloader wraps
// every failure in an error of one of the built-in kinds below; your own
// middlewares and handlers can define more with New and Register:
//
//	var ErrBanned = errkind.New("BannedError")
//
//	func init() { errkind.Register(ErrBanned.Name(), ErrBanned) }
//
// after which `RETRY_EXCEPTIONS: [BannedError]` retries them and
// errors.Is(err, ErrBanned) recognises them. The package sits below both the
// downloader (which produces these errors) and the throttler and
// middlewares (which read them), so none of those import each other for it.
package errkind

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Kind is a kind of error. errors.Is(err, kind) tells whether err is of the
// kind; its Name is how settings refer to it.
type Kind struct{ name string }

// New returns a new kind called name; Register it to make it usable by name
// in settings.
func New(name string) *Kind { return &Kind{name: name} }

// Error returns the kind's name, so that a *Kind is an error usable as an
// errors.Is target.
func (k *Kind) Error() string { return k.name }

// Name returns the kind's name, as used in settings.
func (k *Kind) Name() string { return k.name }

// The built-in download error kinds (Scrapy's exception names).
var (
	// DownloadFailed: the connection could not be made or broke: refused,
	// reset, DNS failure, TLS failure, protocol error.
	DownloadFailed = New("DownloadFailedError")
	// DownloadTimeout: DOWNLOAD_TIMEOUT (or the download_timeout meta)
	// elapsed before the body was complete.
	DownloadTimeout = New("DownloadTimeoutError")
	// ResponseDataLoss: the body ended before Content-Length bytes.
	ResponseDataLoss = New("ResponseDataLossError")
	// ResponseTooLarge: the body, after decompression, exceeded
	// DOWNLOAD_MAXSIZE (or the download_maxsize meta); the download was
	// cancelled at the limit.
	ResponseTooLarge = New("ResponseTooLargeError")
	// ProxyFailed: the request's proxy could not be connected to, or
	// refused the tunnel (CONNECT) to the target. It says nothing about
	// the target host, so it is not in BACKOFF_EXCEPTIONS: the ProxyPool
	// middleware rests the proxy and retries on another one.
	ProxyFailed = New("ProxyError")
)

var (
	mu    sync.RWMutex
	kinds = map[string]error{}
)

func init() {
	for _, k := range []*Kind{DownloadFailed, DownloadTimeout, ResponseDataLoss, ResponseTooLarge, ProxyFailed} {
		Register(k.name, k)
	}
}

// Register makes target usable by name in settings that list error kinds:
// an error matches when errors.Is(err, target). Registering a name twice
// replaces the earlier target. A nil target panics: it would match
// nothing, and Lookup reports unknown names with nil.
func Register(name string, target error) {
	if target == nil {
		panic("errkind: Register(" + name + ", nil)")
	}
	mu.Lock()
	kinds[name] = target
	mu.Unlock()
}

// Lookup returns the error registered under name, or nil when no kind has
// that name.
func Lookup(name string) error {
	mu.RLock()
	defer mu.RUnlock()
	return kinds[name]
}

// Names returns every registered kind name, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(kinds))
	for n := range kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Resolve turns a list of kind names read from setting into errors to match
// with errors.Is, or an error naming the setting and the first unknown name.
func Resolve(setting string, names []string) ([]error, error) {
	out := make([]error, 0, len(names))
	for _, n := range names {
		k := Lookup(n)
		if k == nil {
			return nil, fmt.Errorf("%s: unknown error kind %q (known: %v; register others with errkind.Register)", setting, n, Names())
		}
		out = append(out, k)
	}
	return out, nil
}

// Kinded is implemented by errors that carry their kind (the downloader's
// *downloader.Error); Of reads it without trying every registered kind.
type Kinded interface {
	ErrorKind() *Kind
}

// Of returns the name of the kind err is of, or "" when it matches no
// registered kind. Stats use it to count errors by kind.
func Of(err error) string {
	if err == nil {
		return ""
	}
	var k Kinded
	if errors.As(err, &k) {
		if kind := k.ErrorKind(); kind != nil {
			return kind.name
		}
	}
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names) // deterministic when err matches several kinds
	for _, n := range names {
		if errors.Is(err, kinds[n]) {
			return n
		}
	}
	return ""
}
