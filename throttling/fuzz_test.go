package throttling

import (
	"net/http"
	"testing"
	"time"
)

// FuzzServerDelayHeaders: Retry-After and RateLimit-Reset values from a
// server never give a negative delay, never panic, and ServerDelay stays
// under its cap.
func FuzzServerDelayHeaders(f *testing.F) {
	for _, s := range []string{"120", "0", "-1", "1e300", "99999999999999999999", "Wed, 21 Oct 2026 07:28:00 GMT",
		"Fri, 31 Dec 9999 23:59:59 GMT", " 5 ", "", "1.5", "Mon, 01 Jan 0001 00:00:00 GMT"} {
		f.Add(s, s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, retryAfter, reset string) {
		if d, ok := ParseRetryAfter(retryAfter, now); ok && d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v", retryAfter, d)
		}
		if d, ok := ParseRateLimitReset(reset); ok && d < 0 {
			t.Fatalf("ParseRateLimitReset(%q) = %v", reset, d)
		}
		h := http.Header{"Retry-After": {retryAfter}, "Ratelimit-Reset": {reset}}
		if d := ServerDelay(h, now, time.Hour); d < 0 || d > time.Hour {
			t.Fatalf("ServerDelay(%q, %q) = %v, want within [0, 1h]", retryAfter, reset, d)
		}
	})
}
