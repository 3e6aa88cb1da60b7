package downloader

import (
	"fmt"

	"github.com/gocrawl/gocrawl/errkind"
)

// Error is a failed download.
type Error struct {
	// Kind classifies the failure.
	Kind *errkind.Kind
	// URL is the request URL.
	URL string
	// Err is the underlying error.
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s: %v", e.Kind.Name(), e.URL, e.Err) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// ErrorKind implements errkind.Kinded.
func (e *Error) ErrorKind() *errkind.Kind { return e.Kind }
