package throttling

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRateLimit(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		want   RateLimit
		ok     bool
	}{
		{"current draft", map[string]string{"RateLimit": `"default";r=3;t=2`, "RateLimit-Policy": `"default";q=10;w=1`},
			RateLimit{Remaining: 3, HasRemaining: true, Reset: 2 * time.Second, Quota: 10, Window: time.Second, Policy: "default"}, true},
		{"several policies: the named one", map[string]string{"RateLimit": `"day";r=900;t=3600`,
			"RateLimit-Policy": `"burst";q=100;w=60, "day";q=1000;w=86400`},
			RateLimit{Remaining: 900, HasRemaining: true, Reset: time.Hour, Quota: 1000, Window: 86400 * time.Second, Policy: "day"}, true},
		{"several items: the most constraining", map[string]string{"RateLimit": `"a";r=50;t=30, "b";r=2;t=1`},
			RateLimit{Remaining: 2, HasRemaining: true, Reset: time.Second, Policy: "b"}, true},
		{"token names, policy without RateLimit: the lowest rate", map[string]string{"RateLimit-Policy": `fast;q=100;w=1, slow;q=10;w=2`},
			RateLimit{Quota: 10, Window: 2 * time.Second, Policy: "slow"}, true},
		{"older draft", map[string]string{"RateLimit-Limit": "5", "RateLimit-Remaining": "2", "RateLimit-Reset": "1"},
			RateLimit{Limit: 5, Remaining: 2, HasRemaining: true, Reset: time.Second}, true},
		{"older draft with a quota policy", map[string]string{"RateLimit-Limit": "10, 10;w=1, 1000;w=3600", "RateLimit-Remaining": "0", "RateLimit-Reset": "3"},
			RateLimit{Limit: 10, Quota: 10, Window: time.Second, HasRemaining: true, Reset: 3 * time.Second}, true},
		{"dictionary form", map[string]string{"RateLimit": "limit=100, remaining=50, reset=5"},
			RateLimit{Limit: 100, Remaining: 50, HasRemaining: true, Reset: 5 * time.Second}, true},
		{"malformed fields are ignored one by one", map[string]string{"RateLimit": `"x";r=-1;t=`, "RateLimit-Remaining": "many", "RateLimit-Reset": "7"},
			RateLimit{Reset: 7 * time.Second}, true},
		{"negative and wrong types", map[string]string{"RateLimit-Policy": `"p";q=-5;w=1, "p";q="ten";w=1`, "RateLimit-Remaining": "-3"}, RateLimit{}, false},
		{"garbage", map[string]string{"RateLimit": "{{{", "RateLimit-Policy": ";;;", "RateLimit-Limit": "abc"}, RateLimit{}, false},
		{"none", nil, RateLimit{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := ParseRateLimit(h)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("ParseRateLimit = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if r := (RateLimit{Quota: 10, Window: 2 * time.Second}).Rate(); r != 5 {
		t.Fatalf("Rate() = %v, want 5", r)
	}
}

// A trigger response's structured RateLimit reset is a server delay, as
// RateLimit-Reset is.
func TestServerDelayStructuredReset(t *testing.T) {
	h := http.Header{}
	h.Set("RateLimit", `"default";r=0;t=4`)
	if d := ServerDelay(h, t0, 300*sec); d != 4*sec {
		t.Fatalf("ServerDelay = %v, want 4s", d)
	}
}

// The header names are those of the drafts, in canonical form: looking
// them up allocates nothing.
func TestRateLimitHeaderNamesCanonical(t *testing.T) {
	for name, key := range map[string]string{
		"RateLimit": hdrRateLimit, "RateLimit-Policy": hdrRateLimitPolicy, "RateLimit-Remaining": hdrRateLimitRemaining,
		"RateLimit-Reset": hdrRateLimitReset, "RateLimit-Limit": hdrRateLimitLimit,
	} {
		if http.CanonicalHeaderKey(name) != key {
			t.Errorf("%s: looked up as %q, want %q", name, key, http.CanonicalHeaderKey(name))
		}
	}
}
