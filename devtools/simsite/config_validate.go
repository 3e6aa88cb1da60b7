package simsite

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// This file checks a Config: Validate reports every bad field at once,
// each as a *FieldError naming it (e.g. hosts[1].limit.burst) and matching
// ErrInvalidConfig. LoadConfig and Start call it; the fields and their
// defaults are in config.go.

// ErrInvalidConfig is matched (errors.Is) by every error that Validate,
// LoadConfig and Start return for a bad configuration.
var ErrInvalidConfig = errors.New("simsite: invalid config")

// FieldError names one bad field of a Config, e.g.
// `hosts[1].limit.burst = -3: must be >= 0`.
type FieldError struct {
	Field  string // dotted path of the field, e.g. "hosts[0].latency.max"
	Value  any    // the offending value
	Reason string // what is wrong with it
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("simsite: %s = %v: %s", e.Field, e.Value, e.Reason)
}

// Is reports true for ErrInvalidConfig.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidConfig }

// fieldErrs collects FieldErrors under a prefix.
type fieldErrs struct {
	prefix string
	errs   []error
}

func (v *fieldErrs) add(field string, value any, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Field: v.prefix + field, Value: value, Reason: fmt.Sprintf(format, args...)})
}

// Validate reports every bad field of the config (joined), each a
// *FieldError matching ErrInvalidConfig. Zero values are valid: they mean
// the defaults.
func (c Config) Validate() error {
	v := &fieldErrs{}
	if len(c.Hosts) == 0 {
		v.add("hosts", "[]", "at least one host is required")
	}
	if c.MaxRecords < 0 {
		v.add("max_records", c.MaxRecords, "must be >= 0")
	}
	if c.SharedPort < 0 || c.SharedPort > 65535 {
		v.add("shared_port", c.SharedPort, "must be a port number in [0, 65535]")
	}
	seen := map[string]int{}
	for i, h := range c.Hosts {
		prefix := fmt.Sprintf("hosts[%d].", i)
		if err := h.Validate(); err != nil {
			for _, e := range unjoin(err) {
				var fe *FieldError
				if errors.As(e, &fe) {
					v.errs = append(v.errs, &FieldError{Field: prefix + fe.Field, Value: fe.Value, Reason: fe.Reason})
				} else {
					v.errs = append(v.errs, e)
				}
			}
		}
		key := strings.ToLower(h.Name)
		if j, dup := seen[key]; dup && key != "" {
			v.add(prefix+"name", h.Name, "duplicate of hosts[%d].name", j)
		}
		seen[key] = i
	}
	return errors.Join(v.errs...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Validate reports every bad field of the host (joined), each a *FieldError
// whose Field is relative to the host, e.g. "limit.burst".
func (h HostConfig) Validate() error {
	v := &fieldErrs{}
	if h.Name == "" {
		v.add("name", `""`, "is required")
	} else if !validName(h.Name) {
		v.add("name", h.Name, "may hold only letters, digits, '.' and '-'")
	}
	if h.Port < 0 || h.Port > 65535 {
		v.add("port", h.Port, "must be a port number in [0, 65535]")
	}
	p := h.Pages
	if p.Count < 0 {
		v.add("pages.count", p.Count, "must be >= 0")
	}
	switch p.Graph {
	case "", GraphTree, GraphRandom, GraphChain:
	default:
		v.add("pages.graph", p.Graph, "must be one of tree, random, chain")
	}
	if p.Fanout < 0 {
		v.add("pages.fanout", p.Fanout, "must be >= 0")
	}
	if p.OutDegree < 0 {
		v.add("pages.out_degree", p.OutDegree, "must be >= 0")
	}
	if p.Size < 0 {
		v.add("pages.size", p.Size, "must be >= 0")
	}
	switch p.Links {
	case "", LinksMixed, LinksRelative, LinksAbsolute:
	default:
		v.add("pages.links", p.Links, "must be one of mixed, relative, absolute")
	}

	lat := h.Latency
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"fixed", lat.Fixed}, {"min", lat.Min}, {"max", lat.Max}, {"mean", lat.Mean}, {"stddev", lat.StdDev}} {
		if f.d < 0 {
			v.add("latency."+f.name, f.d, "must be >= 0") // in a fixed order: errors read the same every run
		}
	}
	switch lat.Kind {
	case "", LatencyNone, LatencyFixed:
	case LatencyUniform:
		if lat.Max < lat.Min {
			v.add("latency.max", lat.Max, "must be >= latency.min (%v)", lat.Min)
		}
	case LatencyNormal, LatencyExponential:
		if lat.Mean <= 0 {
			v.add("latency.mean", lat.Mean, "must be > 0 for kind %s", lat.Kind)
		}
		if lat.Max > 0 && lat.Max < lat.Min {
			v.add("latency.max", lat.Max, "must be >= latency.min (%v)", lat.Min)
		}
	default:
		v.add("latency.kind", lat.Kind, "must be one of none, fixed, uniform, normal, exponential")
	}
	if lat.Capacity < 0 {
		v.add("latency.capacity", lat.Capacity, "must be >= 0")
	}

	l := h.Limit
	switch l.Key {
	case "", KeyIP, KeyGlobal:
	default:
		v.add("limit.key", l.Key, "must be ip or global")
	}
	if l.Rate < 0 {
		v.add("limit.rate", l.Rate, "must be >= 0")
	}
	if l.Burst < 0 {
		v.add("limit.burst", l.Burst, "must be >= 0")
	}
	if l.Burst > 0 && l.Rate == 0 {
		v.add("limit.burst", l.Burst, "needs limit.rate > 0")
	}
	if l.MaxConcurrent < 0 {
		v.add("limit.max_concurrent", l.MaxConcurrent, "must be >= 0")
	}
	if l.Window < 0 {
		v.add("limit.window", l.Window, "must be >= 0")
	}
	if l.WindowLimit < 0 {
		v.add("limit.window_limit", l.WindowLimit, "must be >= 0")
	}
	if (l.Window > 0) != (l.WindowLimit > 0) {
		v.add("limit.window", l.Window, "limit.window and limit.window_limit (%d) must be set together", l.WindowLimit)
	}
	switch l.Status {
	case 0, http.StatusTooManyRequests, http.StatusServiceUnavailable:
	default:
		v.add("limit.status", l.Status, "must be 429 or 503")
	}
	switch l.RetryAfter {
	case "", RetryAfterSeconds, RetryAfterHTTPDate, RetryAfterNone:
	default:
		v.add("limit.retry_after", l.RetryAfter, "must be seconds, http-date or none")
	}
	if l.RetryAfterValue < 0 {
		v.add("limit.retry_after_value", l.RetryAfterValue, "must be >= 0")
	}
	switch l.RateLimitFormat {
	case "", RateLimitSeparate, RateLimitStructured:
	default:
		v.add("limit.ratelimit_format", l.RateLimitFormat, "must be separate or structured")
	}
	if len(l.Schedule) > 0 && l.Rate <= 0 {
		v.add("limit.schedule", len(l.Schedule), "needs limit.rate > 0 (the rate before the first change)")
	}
	for i, c := range l.Schedule {
		name := fmt.Sprintf("limit.schedule[%d].", i)
		if c.Rate <= 0 {
			v.add(name+"rate", c.Rate, "must be > 0")
		}
		if c.After < 0 {
			v.add(name+"after", c.After, "must be >= 0")
		} else if i > 0 && c.After <= l.Schedule[i-1].After {
			v.add(name+"after", c.After, "must be after schedule[%d].after (%v)", i-1, l.Schedule[i-1].After)
		}
	}

	r := h.Robots
	if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
		v.add("robots.status", r.Status, "must be an HTTP status in [100, 599]")
	}
	if r.CrawlDelay < 0 {
		v.add("robots.crawl_delay", r.CrawlDelay, "must be >= 0")
	}
	for i, d := range append(append([]string{}, r.Disallow...), r.Allow...) {
		if d != "" && !strings.HasPrefix(d, "/") {
			name := fmt.Sprintf("robots.disallow[%d]", i)
			if i >= len(r.Disallow) {
				name = fmt.Sprintf("robots.allow[%d]", i-len(r.Disallow))
			}
			v.add(name, d, "must start with '/'")
		}
	}

	for i, f := range h.Faults {
		name := fmt.Sprintf("faults[%d].", i)
		switch f.Kind {
		case FaultReset, FaultTruncate, FaultSlow, FaultEndless:
		default:
			v.add(name+"kind", f.Kind, "must be one of reset, truncate, slow, endless")
		}
		if f.Probability < 0 || f.Probability > 1 {
			v.add(name+"probability", f.Probability, "must be in [0, 1]")
		}
		if f.Probability == 0 && f.PathPrefix == "" {
			v.add(name+"probability", f.Probability, "set a probability, a path_prefix, or both")
		}
		if f.PathPrefix != "" && !strings.HasPrefix(f.PathPrefix, "/") {
			v.add(name+"path_prefix", f.PathPrefix, "must start with '/'")
		}
		if f.ChunkSize < 0 {
			v.add(name+"chunk_size", f.ChunkSize, "must be >= 0")
		}
		if f.Interval < 0 {
			v.add(name+"interval", f.Interval, "must be >= 0")
		}
	}
	return errors.Join(v.errs...)
}

func validName(s string) bool {
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
