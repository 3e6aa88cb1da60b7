package simsite

import (
	"net/http"
	"testing"
	"time"
)

// step is one request (or release) fed to a limiter at an offset from t0.
type step struct {
	at      time.Duration
	key     string // default "a"
	release bool   // release one admitted request of key instead
	allowed bool
	wait    time.Duration // checked when !allowed
}

func runSteps(t *testing.T, cfg LimitConfig, steps []step) {
	t.Helper()
	h := HostConfig{Name: "x", Limit: cfg}
	h.EnsureDefaults()
	l := newLimiter(h.Limit)
	t0 := newFakeClock().Now()
	for i, s := range steps {
		key := s.key
		if key == "" {
			key = "a"
		}
		if s.release {
			l.release(key)
			continue
		}
		d := l.admit(key, t0.Add(s.at))
		if d.allowed != s.allowed {
			t.Fatalf("step %d (at %v, key %s): allowed = %v, want %v", i, s.at, key, d.allowed, s.allowed)
		}
		if !d.allowed && s.wait != 0 && d.wait != s.wait {
			t.Errorf("step %d: wait = %v, want %v", i, d.wait, s.wait)
		}
	}
}

func TestLimiterKinds(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		cfg   LimitConfig
		steps []step
	}{
		{
			name: "token bucket burst then rate",
			cfg:  LimitConfig{Rate: 10, Burst: 3},
			steps: []step{
				{at: 0, allowed: true}, {at: 0, allowed: true}, {at: 0, allowed: true},
				{at: 0, allowed: false, wait: 100 * ms},
				{at: 50 * ms, allowed: false, wait: 50 * ms},
				{at: 100 * ms, allowed: true},
				{at: 100 * ms, allowed: false, wait: 100 * ms},
				{at: 400 * ms, allowed: true}, {at: 400 * ms, allowed: true}, {at: 400 * ms, allowed: true},
				{at: 400 * ms, allowed: false},
			},
		},
		{
			name: "token bucket refills no higher than burst",
			cfg:  LimitConfig{Rate: 1, Burst: 2},
			steps: []step{
				{at: 0, allowed: true},
				{at: time.Hour, allowed: true}, {at: time.Hour, allowed: true},
				{at: time.Hour, allowed: false, wait: time.Second},
			},
		},
		{
			name: "token bucket per client key",
			cfg:  LimitConfig{Rate: 1, Burst: 1},
			steps: []step{
				{key: "a", allowed: true}, {key: "a", allowed: false},
				{key: "b", allowed: true}, {key: "b", allowed: false},
			},
		},
		{
			name: "rejected requests consume no tokens",
			cfg:  LimitConfig{Rate: 1, Burst: 1},
			steps: []step{
				{at: 0, allowed: true},
				{at: 500 * ms, allowed: false}, {at: 900 * ms, allowed: false},
				{at: 1000 * ms, allowed: true},
			},
		},
		{
			name: "max concurrent",
			cfg:  LimitConfig{MaxConcurrent: 2},
			steps: []step{
				{allowed: true}, {allowed: true},
				{allowed: false, wait: time.Second},
				{key: "b", allowed: true},
				{release: true},
				{allowed: true},
				{allowed: false},
			},
		},
		{
			name: "fixed window",
			cfg:  LimitConfig{Window: time.Second, WindowLimit: 2},
			steps: []step{
				{at: 0, allowed: true}, {at: 300 * ms, allowed: true},
				{at: 700 * ms, allowed: false, wait: 300 * ms},
				{at: 1000 * ms, allowed: true}, {at: 1999 * ms, allowed: true},
				{at: 1999 * ms, allowed: false, wait: ms},
				{at: 2000 * ms, allowed: true},
			},
		},
		{
			name: "all kinds must admit; longest wait wins",
			cfg:  LimitConfig{Rate: 100, Burst: 10, Window: time.Second, WindowLimit: 1},
			steps: []step{
				{at: 0, allowed: true},
				{at: 10 * ms, allowed: false, wait: 990 * ms},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.cfg, tt.steps) })
	}
}

func TestRateLimitQuota(t *testing.T) {
	l := newLimiter(LimitConfig{Rate: 2, Burst: 4})
	t0 := newFakeClock().Now()
	d := l.admit("a", t0)
	if d.limit != 4 || d.remaining != 3 || d.reset != 500*time.Millisecond {
		t.Errorf("after 1 of 4: limit %d remaining %d reset %v; want 4, 3, 500ms", d.limit, d.remaining, d.reset)
	}
	for range 3 {
		l.admit("a", t0)
	}
	d = l.admit("a", t0.Add(100*time.Millisecond))
	if d.allowed || d.remaining != 0 || d.reset != 400*time.Millisecond {
		t.Errorf("empty bucket: allowed %v remaining %d reset %v; want false, 0, 400ms", d.allowed, d.remaining, d.reset)
	}
}

func TestRetryAfterHeaders(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 300_000_000, time.UTC)
	limited := decision{allowed: false, wait: 1200 * time.Millisecond, limit: 5, remaining: 0, reset: 1200 * time.Millisecond}
	tests := []struct {
		name       string
		cfg        LimitConfig
		d          decision
		retryAfter string
		until      time.Time
		reset      string
	}{
		{"seconds rounds up", LimitConfig{RetryAfter: RetryAfterSeconds}, limited, "2", now.Add(2 * time.Second), ""},
		{"seconds at least 1", LimitConfig{RetryAfter: RetryAfterSeconds}, decision{wait: time.Millisecond}, "1", now.Add(time.Second), ""},
		{"fixed value", LimitConfig{RetryAfter: RetryAfterSeconds, RetryAfterValue: 30 * time.Second}, limited, "30", now.Add(30 * time.Second), ""},
		{"http-date rounds up to the second", LimitConfig{RetryAfter: RetryAfterHTTPDate}, limited,
			"Mon, 30 Nov 2026 12:00:03 GMT", time.Date(2026, 11, 30, 12, 0, 3, 0, time.UTC), ""},
		{"none", LimitConfig{RetryAfter: RetryAfterNone, RateLimitHeaders: true}, limited, "", time.Time{}, "2"},
		{"ratelimit headers", LimitConfig{RetryAfter: RetryAfterSeconds, RateLimitHeaders: true}, limited, "2", now.Add(2 * time.Second), "2"},
		{"allowed answers carry no Retry-After", LimitConfig{RetryAfter: RetryAfterSeconds, RateLimitHeaders: true},
			decision{allowed: true, limit: 5, remaining: 4, reset: 200 * time.Millisecond}, "", time.Time{}, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			until := retryAfter(h, tt.cfg, tt.d, now)
			if got := h.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if !until.Equal(tt.until) {
				t.Errorf("until = %v, want %v", until, tt.until)
			}
			if got := h.Get("RateLimit-Reset"); got != tt.reset {
				t.Errorf("RateLimit-Reset = %q, want %q", got, tt.reset)
			}
			if tt.cfg.RateLimitHeaders && h.Get("RateLimit-Limit") != "5" {
				t.Errorf("RateLimit-Limit = %q, want 5", h.Get("RateLimit-Limit"))
			}
			if tt.retryAfter != "" && tt.cfg.RetryAfter == RetryAfterHTTPDate {
				if _, err := http.ParseTime(tt.retryAfter); err != nil {
					t.Errorf("Retry-After %q is not an HTTP-date: %v", tt.retryAfter, err)
				}
			}
		})
	}
}
