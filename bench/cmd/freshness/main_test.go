package main

import (
	"bytes"
	"testing"
	"time"
)

// The measured claim: on the default site and budget, the adaptive
// schedule keeps at least 1.5x fewer stale page-hours than the fixed one,
// and the run is deterministic (same seed, same table).
func TestAdaptiveKeepsFewerStalePageHours(t *testing.T) {
	cfg := config{pages: 1000, days: 35, warmup: 7, seed: 1, interval: 24 * time.Hour,
		mix: "hourly=0.1, daily=0.3, weekly=0, never=0.6"}
	var a, b bytes.Buffer
	ratio, err := measure(&a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ratio < 1.5 {
		t.Errorf("adaptive keeps %.2fx fewer stale page-hours than fixed, want >= 1.5x\n%s", ratio, a.String())
	}
	if _, err := measure(&b, cfg); err != nil || a.String() != b.String() {
		t.Errorf("a second run differs:\n%s\n%s", a.String(), b.String())
	}
}
