package throttling

import (
	"testing"
	"time"
)

func TestBackoffDelaysAfterTriggers(t *testing.T) {
	tests := []struct {
		name  string
		kv    []any
		scope string
		want  []time.Duration // delay after 1, 2, 3, ... triggers
	}{
		{"from zero: min delay then doubling", nil, "example.com", []time.Duration{1 * sec, 2 * sec, 4 * sec, 8 * sec}},
		{"from DOWNLOAD_DELAY below min", []any{"DOWNLOAD_DELAY", 0.3}, "example.com", []time.Duration{1 * sec, 2 * sec, 4 * sec}},
		{"from DOWNLOAD_DELAY above min", []any{"DOWNLOAD_DELAY", 1.5}, "example.com", []time.Duration{3 * sec, 6 * sec, 12 * sec}},
		{"capped at BACKOFF_MAX_DELAY", []any{"BACKOFF_MAX_DELAY", 3.0}, "example.com", []time.Duration{1 * sec, 2 * sec, 3 * sec, 3 * sec}},
		{"factor 3", []any{"BACKOFF_DELAY_FACTOR", 3.0}, "example.com", []time.Duration{1 * sec, 3 * sec, 9 * sec}},
		{"per-scope backoff override", []any{"THROTTLING_SCOPES", map[string]any{"example.com": map[string]any{
			"backoff": map[string]any{"delay_factor": 1.5, "min_delay": 5.0, "max_delay": 10.0}}}},
			"example.com", []time.Duration{5 * sec, 7500 * time.Millisecond, 10 * sec, 10 * sec}},
		{"configured delay above max stays", []any{"DOWNLOAD_DELAY", 500.0}, "example.com", []time.Duration{500 * sec}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newSM(t, tt.scope, tt.kv...)
			now := t0
			for i, want := range tt.want {
				now = now.Add(sec)
				m.RecordSent(now, 0)
				now = now.Add(time.Millisecond)
				m.RecordDone(now)
				m.RecordBackoff(now, BackoffSignal{SentAt: now.Add(-time.Millisecond)})
				if got := m.Delay(); !approx(got, want) {
					t.Fatalf("after %d triggers: delay %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

func TestBackoffStepPausesFromTrigger(t *testing.T) {
	m := newSM(t, "example.com")
	m.RecordSent(t0, 0)
	m.RecordDone(t0.Add(100 * time.Millisecond))
	m.RecordBackoff(t0.Add(100*time.Millisecond), BackoffSignal{SentAt: t0})
	if w := m.CanSend(t0.Add(100*time.Millisecond), 0); !approx(w, sec) {
		t.Fatalf("wait after first step = %v, want 1s from the trigger", w)
	}
	if w := m.CanSend(t0.Add(1100*time.Millisecond), 0); w != 0 {
		t.Fatalf("wait 1s after the trigger = %v, want 0", w)
	}
}

func TestBackoffRecoveryOneStepPerQuietWindow(t *testing.T) {
	m := newSM(t, "example.com", "BACKOFF_WINDOW", 10.0)
	now := t0
	for range 3 { // 1, 2, 4 s
		m.RecordSent(now, 0)
		m.RecordDone(now)
		now = now.Add(sec)
		m.RecordBackoff(now, BackoffSignal{SentAt: now.Add(-sec / 2)})
	}
	last := now
	steps := []struct {
		at   time.Duration // after the last trigger
		want time.Duration
	}{
		{9 * sec, 4 * sec},
		{10 * sec, 2 * sec},
		{19 * sec, 2 * sec},
		{20 * sec, 1 * sec},
		{30 * sec, 0},
		{100 * sec, 0},
	}
	for _, s := range steps {
		m.tick(last.Add(s.at))
		if got := m.Delay(); got != s.want {
			t.Errorf("%v after the last trigger: delay %v, want %v", s.at, got, s.want)
		}
	}
	if m.Level() != 0 {
		t.Errorf("level = %d after full recovery, want 0", m.Level())
	}
}

func TestBackoffNewTriggerResetsCountdown(t *testing.T) {
	m := newSM(t, "example.com", "BACKOFF_WINDOW", 10.0)
	m.RecordSent(t0, 0)
	m.RecordBackoff(t0.Add(sec), BackoffSignal{SentAt: t0})
	m.RecordSent(t0.Add(3*sec), 0)
	m.RecordBackoff(t0.Add(5*sec), BackoffSignal{SentAt: t0.Add(3 * sec)}) // 2 s, countdown restarts at 5 s
	m.tick(t0.Add(14 * sec))                                               // 9 s quiet: no step yet
	if got := m.Delay(); got != 2*sec {
		t.Fatalf("9 s after the second trigger: delay %v, want 2s (countdown restarted)", got)
	}
	m.tick(t0.Add(15 * sec))
	if got := m.Delay(); got != sec {
		t.Fatalf("10 s after the second trigger: delay %v, want 1s", got)
	}
}

// A burst of concurrent 429s backs off once; a request sent after the
// step that gets a 429 takes the next step.
func TestBackoffBurstCountsAsOneStep(t *testing.T) {
	m := newSM(t, "example.com", "CONCURRENT_REQUESTS_PER_DOMAIN", 8)
	for range 8 {
		m.RecordSent(t0, 0)
	}
	for i := range 8 {
		now := t0.Add(time.Duration(100+i) * time.Millisecond)
		m.RecordDone(now)
		m.RecordBackoff(now, BackoffSignal{SentAt: t0})
	}
	if m.Level() != 1 || m.Delay() != sec {
		t.Fatalf("after a burst of 8 triggers: level %d delay %v, want 1 step (1s)", m.Level(), m.Delay())
	}
	sent := t0.Add(2 * sec)
	m.RecordSent(sent, 0)
	m.RecordBackoff(sent.Add(100*time.Millisecond), BackoffSignal{SentAt: sent})
	if m.Level() != 2 || m.Delay() != 2*sec {
		t.Fatalf("trigger from a request sent after the step: level %d delay %v, want 2 steps (2s)", m.Level(), m.Delay())
	}
}

func TestBackoffBurstStillHonoursRetryAfter(t *testing.T) {
	m := newSM(t, "example.com")
	m.RecordSent(t0, 0)
	m.RecordSent(t0, 0)
	m.RecordBackoff(t0.Add(sec), BackoffSignal{SentAt: t0})                  // step: 1 s
	m.RecordBackoff(t0.Add(sec), BackoffSignal{SentAt: t0, Delay: 30 * sec}) // burst, but Retry-After 30
	if m.Level() != 1 {
		t.Fatalf("level = %d, want 1", m.Level())
	}
	if w := m.CanSend(t0.Add(sec), 0); w != 30*sec {
		t.Fatalf("wait = %v, want the 30s Retry-After", w)
	}
}

func TestHardDelays(t *testing.T) {
	tests := []struct {
		name string
		sig  BackoffSignal
		want time.Duration
	}{
		{"server delay", BackoffSignal{Delay: 42 * sec}, 42 * sec},
		{"server delay capped at BACKOFF_MAX_DELAY", BackoffSignal{Delay: 1000 * sec}, 300 * sec},
		{"DelayScope not capped", BackoffSignal{Delay: 1000 * sec, Uncapped: true}, 1000 * sec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newSM(t, "example.com")
			m.RecordBackoff(t0, tt.sig)
			if w := m.CanSend(t0, 0); w != tt.want {
				t.Errorf("wait = %v, want %v", w, tt.want)
			}
			if m.Level() != 0 {
				t.Errorf("a hard delay took a step (level %d)", m.Level())
			}
			if m.IsIdle(t0.Add(tt.want-sec), 0) {
				t.Error("scope held back reports idle (evictable)")
			}
		})
	}
}

func TestBackoffJitterOverridesRandomizeDuringBackoff(t *testing.T) {
	// Outside backoff RANDOMIZE_DOWNLOAD_DELAY [0, 0] (off) applies; in
	// backoff BACKOFF_JITTER ±0.1.
	m := newSM(t, "example.com", "BACKOFF_JITTER", 0.1, "DOWNLOAD_DELAY", 1.0)
	now := t0
	m.RecordSent(now, 0)
	if w := m.CanSend(now, 0); w != sec {
		t.Fatalf("no jitter outside backoff: wait %v, want 1s", w)
	}
	m.RecordBackoff(now.Add(sec), BackoffSignal{SentAt: now}) // 2 s
	lo, hi := time.Hour, time.Duration(0)
	for i := range 2000 {
		now = t0.Add(time.Duration(i+10) * time.Minute)
		m.policy.level = 1
		m.policy.quietMark = now
		m.RecordSent(now, 0)
		w := m.CanSend(now, 0)
		lo, hi = min(lo, w), max(hi, w)
		m.RecordDone(now)
	}
	if lo < 1800*time.Millisecond || hi > 2200*time.Millisecond {
		t.Fatalf("backoff gaps in [%v, %v], want within 2s ±10%%", lo, hi)
	}
	if hi-lo < 300*time.Millisecond {
		t.Fatalf("backoff gaps in [%v, %v]: jitter barely applied", lo, hi)
	}
}
