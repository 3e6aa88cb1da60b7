package simsite

import (
	"testing"
	"time"
)

func TestLatencySampler(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name           string
		cfg            LatencyConfig
		lo, hi         time.Duration // every sample in [lo, hi]
		meanLo, meanHi time.Duration // mean of 2000 samples in [meanLo, meanHi]
	}{
		{"none", LatencyConfig{Kind: LatencyNone}, 0, 0, 0, 0},
		{"fixed", LatencyConfig{Kind: LatencyFixed, Fixed: 7 * ms}, 7 * ms, 7 * ms, 7 * ms, 7 * ms},
		{"uniform", LatencyConfig{Kind: LatencyUniform, Min: 10 * ms, Max: 20 * ms}, 10 * ms, 20 * ms, 14 * ms, 16 * ms},
		{"uniform degenerate", LatencyConfig{Kind: LatencyUniform, Min: 3 * ms, Max: 3 * ms}, 3 * ms, 3 * ms, 3 * ms, 3 * ms},
		{"normal clamped", LatencyConfig{Kind: LatencyNormal, Mean: 50 * ms, StdDev: 10 * ms, Min: 40 * ms, Max: 60 * ms}, 40 * ms, 60 * ms, 45 * ms, 55 * ms},
		{"exponential", LatencyConfig{Kind: LatencyExponential, Mean: 10 * ms, Min: ms}, ms, time.Hour, 9 * ms, 13 * ms},
		{"exponential capped", LatencyConfig{Kind: LatencyExponential, Mean: 10 * ms, Max: 15 * ms}, 0, 15 * ms, 5 * ms, 10 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newLatencySampler(tt.cfg, 3), newLatencySampler(tt.cfg, 3)
			var sum time.Duration
			const n = 2000
			for i := range n {
				d := a.sample()
				if d != b.sample() {
					t.Fatalf("sample %d differs between two samplers with the same seed", i)
				}
				if d < tt.lo || d > tt.hi {
					t.Fatalf("sample %v outside [%v, %v]", d, tt.lo, tt.hi)
				}
				sum += d
			}
			if mean := sum / n; mean < tt.meanLo || mean > tt.meanHi {
				t.Errorf("mean %v outside [%v, %v]", mean, tt.meanLo, tt.meanHi)
			}
		})
	}
}
