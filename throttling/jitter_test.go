package throttling

import (
	"testing"
	"time"
)

func TestRandomizeDownloadDelayBounds(t *testing.T) {
	tests := []struct {
		name   string
		v      any
		lo, hi time.Duration // for DOWNLOAD_DELAY 2s
	}{
		{"true = ±50%", true, 1 * sec, 3 * sec},
		{"factor 0.2", 0.2, 1600 * time.Millisecond, 2400 * time.Millisecond},
		{"pair [-0.1, 0.3]", []any{-0.1, 0.3}, 1800 * time.Millisecond, 2600 * time.Millisecond},
		{"false = exact", false, 2 * sec, 2 * sec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newSM(t, "example.com", "DOWNLOAD_DELAY", 2.0, "RANDOMIZE_DOWNLOAD_DELAY", tt.v)
			lo, hi := time.Hour, time.Duration(0)
			for i := range 3000 {
				now := t0.Add(time.Duration(i) * time.Minute)
				m.RecordSent(now, 0)
				m.RecordDone(now)
				w := m.CanSend(now, 0)
				lo, hi = min(lo, w), max(hi, w)
			}
			if lo < tt.lo || hi > tt.hi {
				t.Fatalf("gaps in [%v, %v], want within [%v, %v]", lo, hi, tt.lo, tt.hi)
			}
			// The range is used, not just one point of it.
			if span := tt.hi - tt.lo; span > 0 && (hi-lo) < span*8/10 {
				t.Fatalf("gaps in [%v, %v] cover less than 80%% of [%v, %v]", lo, hi, tt.lo, tt.hi)
			}
		})
	}
}
