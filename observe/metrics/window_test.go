package metrics

import (
	"math/rand/v2"
	"testing"
	"time"
)

// bruteWindows recomputes the start-rate measurements the obvious way.
func bruteWindows(ts []time.Time) (max1s, max100, first500 int) {
	for i := range ts {
		n1, n100 := 0, 0
		for j := i; j < len(ts); j++ {
			d := ts[j].Sub(ts[i])
			if d < time.Second {
				n1++
			}
			if d < 100*time.Millisecond {
				n100++
			}
		}
		max1s, max100 = max(max1s, n1), max(max100, n100)
		if ts[i].Sub(ts[0]) < 500*time.Millisecond {
			first500++
		}
	}
	return
}

func TestStartWindows(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		out := make([]time.Time, len(ms))
		for i, m := range ms {
			out[i] = base.Add(time.Duration(m) * time.Millisecond)
		}
		return out
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	var random []time.Time
	cur := base
	for range 5000 {
		cur = cur.Add(time.Duration(rnd.ExpFloat64() * float64(3*time.Millisecond)))
		random = append(random, cur)
	}
	tests := []struct {
		name                  string
		starts                []time.Time
		max1s, max100, first5 int
	}{
		{"one", at(0), 1, 1, 1},
		{"burst at t=0", at(0, 0, 0, 0, 0), 5, 5, 5},
		{"evenly 10 per second", at(0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000), 10, 1, 5},
		{"window edges are half-open", at(0, 99, 100, 999, 1000), 4, 2, 3},
		{"late burst", at(0, 2000, 2010, 2020, 2030), 4, 4, 1},
		{"random", random, -1, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w startWindows
			for _, s := range tt.starts {
				w.add(s)
			}
			m1, m100, f5 := bruteWindows(tt.starts)
			if tt.max1s >= 0 && (m1 != tt.max1s || m100 != tt.max100 || f5 != tt.first5) {
				t.Fatalf("test table disagrees with brute force: %d %d %d", m1, m100, f5)
			}
			if w.max1s != m1 || w.max100ms != m100 || w.first500 != f5 {
				t.Errorf("max1s=%d max100ms=%d first500=%d, want %d %d %d", w.max1s, w.max100ms, w.first500, m1, m100, f5)
			}
		})
	}
}

func TestStartWindowsOutOfOrderCountsAsLatest(t *testing.T) {
	base := time.Unix(1000, 0)
	var w startWindows
	w.add(base.Add(50 * time.Millisecond))
	w.add(base) // reordered by a few goroutine switches
	w.add(base.Add(60 * time.Millisecond))
	if w.max100ms != 3 || w.first500 != 3 {
		t.Errorf("max100ms=%d first500=%d, want 3 3", w.max100ms, w.first500)
	}
}
