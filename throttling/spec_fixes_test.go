package throttling

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A robots.txt Crawl-delay only raises the delay: with DOWNLOAD_DELAY 5,
// Crawl-delay 2 keeps 5 (and sets concurrency 1); Crawl-delay 8 raises it.
func TestRobotsCrawlDelayOnlyRaises(t *testing.T) {
	th, _ := newTestThrottler(t, "DOWNLOAD_DELAY", 5.0)
	for _, tt := range []struct {
		scope string
		crawl time.Duration
		want  time.Duration
	}{
		{"lower.example", 2 * sec, 5 * sec},
		{"higher.example", 8 * sec, 8 * sec},
	} {
		th.Wait(t0, scopesOf(tt.scope))
		th.SetRobotsDelay(tt.scope, tt.crawl)
		m := th.scopes[tt.scope].mgr.(*ThrottlingScopeManager)
		if m.Delay() != tt.want || m.Concurrency() != 1 {
			t.Errorf("%s, Crawl-delay %v: delay %v concurrency %d, want %v and 1", tt.scope, tt.crawl, m.Delay(), m.Concurrency(), tt.want)
		}
		if v := th.View(tt.scope); durationOf(v.Delay) != tt.want {
			t.Errorf("%s: view delay %v, want %v", tt.scope, v.Delay, tt.want)
		}
	}
	// A rampup scope's floor follows the same rule.
	r, _ := newTestThrottler(t, "DOWNLOAD_DELAY", 5.0, "THROTTLING_SCOPES", map[string]any{"ramp.example": map[string]any{"rampup": true}})
	r.Wait(t0, scopesOf("ramp.example"))
	r.SetRobotsDelay("ramp.example", 2*sec)
	if m := r.scopes["ramp.example"].mgr.(*ThrottlingScopeManager); m.policy.rampFloor != 5*sec || m.Delay() != 5*sec {
		t.Errorf("rampup scope: floor %v delay %v, want 5s", m.policy.rampFloor, m.Delay())
	}
}

// A rampup scope without concurrency has no ceiling of its own: it starts
// at min_concurrency, whatever its kind's default, and grows past it.
func TestRampupWithoutConcurrencyHasNoCeiling(t *testing.T) {
	m := newSM(t, "api", "BACKOFF_WINDOW", 1.0, "THROTTLING_SCOPES", map[string]any{
		"api": map[string]any{"rampup": true, "min_concurrency": 3}})
	if m.Concurrency() != 3 {
		t.Fatalf("starts at concurrency %d, want min_concurrency 3", m.Concurrency())
	}
	now := t0
	for range 12 { // quiet windows with sends: one step up each
		m.RecordSent(now, 0)
		m.RecordDone(now)
		now = now.Add(sec)
		m.tick(now)
	}
	if m.Concurrency() <= 8 {
		t.Fatalf("concurrency %d after 12 quiet windows, want above the domain default of 8 (no ceiling)", m.Concurrency())
	}
	ceil := newSM(t, "api.example.com", "BACKOFF_WINDOW", 1.0, "THROTTLING_SCOPES", map[string]any{
		"api.example.com": map[string]any{"rampup": true, "concurrency": 4}})
	now = t0
	for range 12 {
		ceil.RecordSent(now, 0)
		ceil.RecordDone(now)
		now = now.Add(sec)
		ceil.tick(now)
	}
	if ceil.Concurrency() != 4 {
		t.Fatalf("explicit ceiling: concurrency %d, want 4", ceil.Concurrency())
	}
}

func TestMinConcurrencyValidation(t *testing.T) {
	tests := []struct {
		entry map[string]any
		err   string
	}{
		{map[string]any{"rampup": true, "min_concurrency": 3}, ""},
		{map[string]any{"concurrency": 2, "min_concurrency": 3}, "3 is above concurrency 2"},
		{map[string]any{"min_concurrency": 3}, "above the scope's default concurrency 1"},
		{map[string]any{"rate_control": map[string]any{"latnecy": false}}, `did you mean "latency"`},
		{map[string]any{"rate_control": "yes"}, "want true, false or a mapping"},
	}
	for _, tt := range tests {
		_, err := ReadConfig(testSettings(t, "THROTTLING_SCOPES", map[string]any{"api": tt.entry}))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%v: %v", tt.entry, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%v: error %v, want one containing %q", tt.entry, err, tt.err)
		}
	}
	cfg, err := ReadConfig(testSettings(t, "THROTTLING_RATE_CONTROL", true, "THROTTLING_SCOPES", map[string]any{
		"a": map[string]any{"rate_control": false}, "b": map[string]any{"rate_control": map[string]any{"latency": false}}}))
	if err != nil {
		t.Fatal(err)
	}
	if a, b, c := cfg.Scope("a").RateControl, cfg.Scope("b").RateControl, cfg.Scope("c").RateControl; a.Enabled || !b.Enabled || b.Latency || !c.Enabled || !c.Latency {
		t.Fatalf("rate_control: a %+v b %+v default %+v", a, b, c)
	}
}
