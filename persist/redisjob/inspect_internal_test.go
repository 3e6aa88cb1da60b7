package redisjob

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/throttling"
)

// jobs inspect reads the backoff level, the pace and the rate controller's
// state from the policy record the throttler writes.
func TestPolicyLevel(t *testing.T) {
	record := func(st throttling.PolicyState) string {
		raw, err := json.Marshal(map[string]any{"policy": st})
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	tests := []struct {
		name      string
		record    string
		level     int
		pace      time.Duration
		rate, est float64
	}{
		{"no record", "", 0, 0, 0, 0},
		{"unreadable", "{", 0, 0, 0, 0},
		{"backing off", record(throttling.PolicyState{Version: 2, Level: 3, Pace: 400 * time.Millisecond}), 3, 400 * time.Millisecond, 0, 0},
		{"rate controller pacing", record(throttling.PolicyState{Version: 2, RateOn: true, Rate: 2.5, RateEstimate: 2.6}), 0, 0, 2.5, 2.6},
		{"rate controller released", record(throttling.PolicyState{Version: 2, Rate: 2.5, RateEstimate: 2.6}), 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			level, pace, rate, est := policyLevel(tt.record)
			if level != tt.level || pace != tt.pace || rate != tt.rate || est != tt.est {
				t.Fatalf("policyLevel = %d, %v, %v, %v; want %d, %v, %v, %v", level, pace, rate, est, tt.level, tt.pace, tt.rate, tt.est)
			}
		})
	}
}
