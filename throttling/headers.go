package throttling

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRetryAfter reads a Retry-After header value at now: delta-seconds
// ("120") or an HTTP-date ("Wed, 21 Oct 2026 07:28:00 GMT"). It returns
// the delay and true, or false for a missing, malformed or negative value
// and for a date that is not in the future. "0" gives (0, true): the
// caller then takes a normal backoff step.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > 1e9 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d <= 0 {
		return 0, false
	}
	return d, true
}

// ParseRateLimitReset reads a RateLimit-Reset header value
// (draft-polli-ratelimit-headers: delta-seconds until the quota resets).
// It returns false for a missing, malformed or negative value.
func ParseRateLimitReset(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" || !isDigits(v) {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > 1e9 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// ServerDelay returns the delay a response asks for: the larger of its
// Retry-After and its RateLimit reset (RateLimit-Reset, or the t parameter
// of a structured RateLimit field: see RateLimit), capped at maxDelay
// (when positive). It returns 0 when no header holds a usable positive
// value, so the caller takes a normal backoff step.
func ServerDelay(h http.Header, now time.Time, maxDelay time.Duration) time.Duration {
	var d time.Duration
	if ra, ok := ParseRetryAfter(h.Get("Retry-After"), now); ok {
		d = ra
	}
	if rl, ok := ParseRateLimit(h); ok {
		d = max(d, rl.Reset)
	}
	if maxDelay > 0 {
		d = min(d, maxDelay)
	}
	return d
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
