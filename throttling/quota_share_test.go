package throttling_test

import (
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/throttling"
)

func TestQuotaShare(t *testing.T) {
	s := settings.New()
	if err := s.SetMap(map[string]any{"THROTTLING_SCOPES": map[string]any{
		"api": map[string]any{"quota": 100.0, "window": 60.0},
	}}, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	thr, err := throttling.New(s, throttling.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		scope  string
		amount float64
		want   float64
	}{
		{"no quota", "example.com", 10, 0},
		{"zero amount", "api", 0, 0},
		{"untouched scope: whole quota left", "api", 25, 0.25},
	}
	for _, tc := range tests {
		if got := thr.QuotaShare(tc.scope, tc.amount); got != tc.want {
			t.Errorf("%s: QuotaShare(%q, %v) = %v, want %v", tc.name, tc.scope, tc.amount, got, tc.want)
		}
	}
	thr.Sent(clk.Now(), throttling.Scopes{{Name: "api", Amount: 50}})
	if got := thr.QuotaShare("api", 25); got != 0.5 {
		t.Errorf("after using half: QuotaShare = %v, want 0.5", got)
	}
	clk.Advance(61 * time.Second)
	if got := thr.QuotaShare("api", 25); got != 0.25 {
		t.Errorf("after the window: QuotaShare = %v, want 0.25", got)
	}
}
