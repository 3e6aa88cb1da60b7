package throttling

import (
	"testing"
	"time"
)

func TestStartLimiterTokenBucket(t *testing.T) {
	tests := []struct {
		name   string
		rate   float64
		burst  int
		starts int             // wanted starts, greedily, each as soon as allowed
		wantAt []time.Duration // time of each start
	}{
		{"burst 1: no t=0 burst", 10, 1, 4, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}},
		{"burst 3", 10, 3, 5, []time.Duration{0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond}},
		{"off", 0, 1, 3, []time.Duration{0, 0, 0}},
		{"2 per second", 2, 1, 3, []time.Duration{0, 500 * time.Millisecond, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewStartLimiter(tt.rate, tt.burst, t0)
			now := t0
			for i := range tt.starts {
				w := l.Wait(now)
				now = now.Add(w)
				if l.Wait(now) != 0 {
					t.Fatalf("start %d: still waiting after the announced wait", i)
				}
				l.Take(now)
				if got := now.Sub(t0); !approx(got, tt.wantAt[i]) {
					t.Fatalf("start %d at %v, want %v", i, got, tt.wantAt[i])
				}
			}
		})
	}
}

// With 50 free slots and MAX_STARTS_BURST 1, one tick starts one request.
func TestStartLimiterFiftyFreeSlotsOneTick(t *testing.T) {
	l := NewStartLimiter(5, 1, t0)
	started := 0
	for range 50 { // the engine's admission loop, all at t=0
		if l.Wait(t0) > 0 {
			break
		}
		l.Take(t0)
		started++
	}
	if started != 1 {
		t.Fatalf("%d starts at t=0, want 1", started)
	}
	// Over the first second: 1 + 5 starts at most.
	for ms := 1; ms <= 1000; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		for l.Wait(now) == 0 {
			l.Take(now)
			started++
		}
	}
	if started != 6 {
		t.Fatalf("%d starts in the first second at 5/s, want 6", started)
	}
}
