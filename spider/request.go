package spider

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gocrawl/gocrawl/internal/reqnames"
)

// Meta holds per-request metadata. Values must be JSON-serialisable (strings,
// numbers, booleans, nil, []any and map[string]any of those) so that requests
// can be persisted by a disk or shared queue. Well-known keys are listed in
// the documentation of the packages that read them (for example
// "throttling_scopes", "throttling_delay", "dont_retry", "max_retry_times").
type Meta map[string]any

// Request is one HTTP request a spider wants made.
//
// Create requests with NewRequest or Response.NewRequest; the zero Method means
// GET. A nil Callback means the spider's Parse method.
type Request struct {
	// URL is the absolute http or https URL to fetch.
	URL *url.URL
	// Method is the HTTP method; "" means GET.
	Method string
	// Header holds request headers; nil means none beyond the defaults.
	Header http.Header
	// Referer is the Referer header sent when Header holds none. The
	// Referer middleware sets it to the page the request was found on (as
	// much of it as the referrer policy allows): one string shared by all
	// the links of a page, so that a queued request carries no header map
	// of its own. A Referer in Header wins over it; RefererHeader returns
	// the value the request is sent with.
	Referer string
	// Body is sent as the request body.
	Body []byte
	// Meta carries data along with the request to its callback and to the
	// middlewares and throttling manager.
	Meta Meta
	// Priority orders scheduling: higher first. Default 0.
	Priority int
	// DontFilter skips the duplicate filter for this request.
	DontFilter bool
	// Depth is the number of links followed from a start request to reach
	// this one; start requests have depth 0.
	Depth int

	// Callback handles the response. It must be a method of the spider
	// (spider.Parse, s.ParseBook) when a persistent queue (JOBDIR) is used,
	// because only methods can be found again by name after a restart.
	Callback Callback
	// Errback handles a failed download or a dropped request (see the
	// Errback type). Same naming rule as Callback.
	Errback Errback

	// stored names the spider methods to call when the request was read
	// back from storage and Callback/Errback are nil (internal/reqnames).
	stored reqnames.Names
}

func init() {
	reqnames.Install(
		func(r any) reqnames.Names { return r.(*Request).stored },
		func(r any, n reqnames.Names) { r.(*Request).stored = n },
	)
}

// ErrInvalidURL is the kind of error returned for URLs that cannot be
// crawled: unparsable, relative, or with a scheme other than http(s).
var ErrInvalidURL = errors.New("invalid URL")

// NewRequest parses rawURL and returns a GET request for it. The URL must be
// absolute with an http or https scheme; any other URL gives an error that
// wraps ErrInvalidURL and names the URL.
func NewRequest(rawURL string, cb Callback) (*Request, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return &Request{URL: u, Callback: cb}, nil
}

// MustRequest is like NewRequest but panics on an invalid URL. Use it for
// literals in tests and examples only.
func MustRequest(rawURL string, cb Callback) *Request {
	r, err := NewRequest(rawURL, cb)
	if err != nil {
		panic(err)
	}
	return r
}

// ParseURL parses an absolute http(s) URL, reporting ErrInvalidURL otherwise.
func ParseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidURL, rawURL, err)
	}
	if err := checkURL(u, rawURL); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL reports ErrInvalidURL, naming rawURL, unless u is an absolute
// http(s) URL with a host.
func checkURL(u *url.URL, rawURL string) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return fmt.Errorf("%w %q: not absolute (missing http:// or https://)", ErrInvalidURL, rawURL)
		}
		return fmt.Errorf("%w %q: scheme %q is not http or https", ErrInvalidURL, rawURL, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("%w %q: missing host", ErrInvalidURL, rawURL)
	}
	return nil
}

// EffectiveMethod returns the request method, GET when unset.
func (r *Request) EffectiveMethod() string {
	if r.Method == "" {
		return http.MethodGet
	}
	return r.Method
}

// RefererHeader returns the Referer the request is sent with: the one in
// Header if any, else the Referer field; "" for none.
func (r *Request) RefererHeader() string {
	if v := r.Header.Get("Referer"); v != "" {
		return v
	}
	return r.Referer
}

// String returns "METHOD URL", for logs.
func (r *Request) String() string {
	if r == nil || r.URL == nil {
		return "<nil request>"
	}
	return r.EffectiveMethod() + " " + r.URL.String()
}

// Host returns the request's host with a non-default port ("example.com",
// "127.0.0.1:8080"), lower-cased: the default throttling scope.
func (r *Request) Host() string { return HostKey(r.URL) }

// HostKey returns u's host lower-cased with the default port for its scheme
// dropped.
func HostKey(u *url.URL) string {
	h := strings.ToLower(u.Host)
	switch {
	case u.Scheme == "http" && strings.HasSuffix(h, ":80"):
		h = h[:len(h)-3]
	case u.Scheme == "https" && strings.HasSuffix(h, ":443"):
		h = h[:len(h)-4]
	}
	return h
}

// Get returns the meta value for key, or nil.
func (r *Request) Get(key string) any {
	if r.Meta == nil {
		return nil
	}
	return r.Meta[key]
}

// GetFloat reads a numeric meta value leniently: float64 (what numbers
// become after a persistent queue), int, int64, or a string holding a
// number. ok is false when the key is missing or holds something else.
func (r *Request) GetFloat(key string) (v float64, ok bool) {
	switch x := r.Get(key).(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// Set stores a meta value, creating Meta when needed, and returns r.
func (r *Request) Set(key string, v any) *Request {
	if r.Meta == nil {
		r.Meta = Meta{}
	}
	r.Meta[key] = v
	return r
}

// Clone returns a deep copy of the request: URL, headers, body and meta
// (nested maps and slices included) are copied, so changing the clone never
// changes r. Callbacks and their names are kept.
func (r *Request) Clone() *Request {
	c := *r
	if r.URL != nil {
		u := *r.URL
		if r.URL.User != nil {
			uu := *r.URL.User
			u.User = &uu
		}
		c.URL = &u
	}
	if r.Header != nil {
		c.Header = r.Header.Clone()
	}
	if r.Body != nil {
		c.Body = append([]byte(nil), r.Body...)
	}
	if r.Meta != nil {
		c.Meta = make(Meta, len(r.Meta))
		for k, v := range r.Meta {
			c.Meta[k] = deepCopy(v)
		}
	}
	return &c
}

// deepCopy copies the containers of JSON-like values; other values (which
// Meta should not hold) are shared.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case Meta:
		m := make(Meta, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	case []string:
		return slices.Clone(x)
	case map[string]float64:
		return maps.Clone(x)
	case map[string]string:
		return maps.Clone(x)
	}
	return v
}
