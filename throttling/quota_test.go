package throttling

import (
	"testing"
	"time"
)

func quotaSM(t *testing.T) *ThrottlingScopeManager {
	return newSM(t, "cost", "THROTTLING_SCOPES", map[string]any{
		"cost": map[string]any{"quota": 10.0, "window": 60.0, "concurrency": 0},
	})
}

func TestQuotaWindows(t *testing.T) {
	m := quotaSM(t)
	steps := []struct {
		at     time.Duration
		amount float64
		wait   time.Duration // CanSend before sending
		send   bool
	}{
		{0, 4, 0, true},
		{1 * sec, 4, 0, true},             // 8 used
		{2 * sec, 4, 58 * sec, false},     // 12 > 10: wait for the window to end
		{2 * sec, 2, 0, true},             // 10 fits exactly
		{30 * sec, 1, 30 * sec, false},    // full
		{60 * sec, 4, 0, true},            // new window starts at 60 s
		{61 * sec, 20, 59 * sec, false},   // too big while something is used
		{120 * sec, 20, 0, true},          // alone in a fresh window, a big request goes
		{121 * sec, 0.5, 59 * sec, false}, // ...and fills it
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		if w := m.CanSend(now, s.amount); w != s.wait {
			t.Fatalf("step %d (at %v, amount %v): wait %v, want %v (used %v)", i, s.at, s.amount, w, s.wait, m.Used())
		}
		if s.send {
			m.RecordSent(now, s.amount)
			m.RecordDone(now)
		}
	}
}

func TestQuotaReconciliation(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name                string
		consumed, remaining *float64
		want                float64
	}{
		{"cost more than estimated", f(3), nil, 9},
		{"cost less than estimated", f(-4), nil, 2},
		{"never below zero", f(-100), nil, 0},
		{"server says what remains", nil, f(1), 9},
		{"remaining wins over consumed", f(5), f(8), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := quotaSM(t)
			m.RecordSent(t0, 6)
			m.ReconcileQuota(t0.Add(sec), tt.consumed, tt.remaining)
			if m.Used() != tt.want {
				t.Fatalf("used %v, want %v", m.Used(), tt.want)
			}
		})
	}
}
