package throttling

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/spider"
)

func TestParseRetryAfter(t *testing.T) {
	date := func(d time.Duration) string { return t0.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * sec, true},
		{" 5 ", 5 * sec, true},
		{"0", 0, true},
		{date(90 * sec), 90 * sec, true},
		{t0.Add(30 * sec).Format(time.RFC850), 30 * sec, true},
		{t0.Add(30 * sec).Format(time.ANSIC), 30 * sec, true},
		{date(-90 * sec), 0, false}, // in the past
		{date(0), 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
		{"99999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, t0)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestServerDelay(t *testing.T) {
	tests := []struct {
		name  string
		ra    string
		reset string
		want  time.Duration
	}{
		{"none", "", "", 0},
		{"retry-after delta", "10", "", 10 * sec},
		{"retry-after date", t0.Add(20 * sec).Format(http.TimeFormat), "", 20 * sec},
		{"ratelimit-reset", "", "15", 15 * sec},
		{"both: larger wins (reset)", "10", "15", 15 * sec},
		{"both: larger wins (retry-after)", "25", "15", 25 * sec},
		{"capped", "1000", "", 300 * sec},
		{"zero falls through", "0", "", 0},
		{"zero retry-after, reset wins", "0", "7", 7 * sec},
		{"malformed ignored", "tomorrow", "x", 0},
		{"past date ignored, reset used", t0.Add(-sec).Format(http.TimeFormat), "3", 3 * sec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.ra != "" {
				h.Set("Retry-After", tt.ra)
			}
			if tt.reset != "" {
				h.Set("RateLimit-Reset", tt.reset)
			}
			if got := ServerDelay(h, t0, 300*sec); got != tt.want {
				t.Errorf("ServerDelay = %v, want %v", got, tt.want)
			}
		})
	}
}

// The default manager turns trigger responses into feedback with the
// server's delay; a 0 delay takes a normal step.
func TestDefaultManagerResponseBackoff(t *testing.T) {
	cfg, err := ReadConfig(testSettings(t, "THROTTLING_SCOPES", map[string]any{
		"strict.example": map[string]any{"backoff": map[string]any{"http_codes": []any{403}, "max_delay": 20.0}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := NewDefaultManager(cfg, nil)
	m.Clock = clock.NewFake(t0)
	req := spider.MustRequest("https://example.com/a", nil)
	tests := []struct {
		name   string
		scope  string
		status int
		ra     string
		want   *ScopeFeedback
	}{
		{"200 no feedback", "example.com", 200, "", nil},
		{"429 step", "example.com", 429, "", &ScopeFeedback{Trigger: true}},
		{"503 retry-after", "example.com", 503, "30", &ScopeFeedback{Trigger: true, Delay: 30 * sec}},
		{"429 retry-after 0", "example.com", 429, "0", &ScopeFeedback{Trigger: true}},
		{"per-scope codes: 429 not a trigger", "strict.example", 429, "", nil},
		{"per-scope codes: 403 trigger", "strict.example", 403, "", &ScopeFeedback{Trigger: true}},
		{"per-scope max_delay caps", "strict.example", 403, "100", &ScopeFeedback{Trigger: true, Delay: 20 * sec}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &spider.Response{URL: req.URL, Status: tt.status, Header: http.Header{}, Request: req}
			if tt.ra != "" {
				res.Header.Set("Retry-After", tt.ra)
			}
			fb, err := m.ResponseBackoff(context.Background(), res, scopesOf(tt.scope))
			if err != nil {
				t.Fatal(err)
			}
			f, ok := fb[tt.scope]
			if tt.want == nil {
				if ok {
					t.Fatalf("feedback %+v, want none", f)
				}
				return
			}
			if !ok || f.Trigger != tt.want.Trigger || f.Delay != tt.want.Delay {
				t.Fatalf("feedback %+v (present %v), want %+v", f, ok, *tt.want)
			}
		})
	}
}

// ParseRateLimit indexes the header map by these names, which is only
// what Header.Values does when they are canonical.
func TestRateLimitHeaderNamesAreCanonical(t *testing.T) {
	for _, n := range []string{hdrRateLimit, hdrRateLimitPolicy, hdrRateLimitRemaining, hdrRateLimitReset, hdrRateLimitLimit} {
		if c := http.CanonicalHeaderKey(n); c != n {
			t.Errorf("%q is not canonical (%q)", n, c)
		}
	}
	h := http.Header{}
	h.Set("ratelimit-reset", "7")
	h.Add("RATELIMIT-REMAINING", "3")
	rl, ok := ParseRateLimit(h)
	if !ok || rl.Reset != 7*time.Second || !rl.HasRemaining || rl.Remaining != 3 {
		t.Fatalf("ParseRateLimit = %+v, %v", rl, ok)
	}
}
