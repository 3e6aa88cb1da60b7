package throttling

import (
	"testing"
	"time"
)

// sendAll sends as many requests as the scope allows at now and returns
// how many went.
func sendAll(m *ThrottlingScopeManager, now time.Time) int {
	n := 0
	for m.CanSend(now, 0) == 0 {
		m.RecordSent(now, 0)
		n++
	}
	return n
}

func TestRetryAfterPacing(t *testing.T) {
	tests := []struct {
		name      string
		kv        []any
		wantBurst int           // requests that leave together when the hard delay ends
		wantPace  time.Duration // delay floor after the Retry-After (before jitter)
	}{
		{"concurrency 8: 1s spread over 8", []any{"BACKOFF_JITTER", 0.0}, 1, 125 * time.Millisecond},
		{"concurrency 4", []any{"BACKOFF_JITTER", 0.0, "CONCURRENT_REQUESTS_PER_DOMAIN", 4}, 1, 250 * time.Millisecond},
		{"pacing off: the whole concurrency at once", []any{"BACKOFF_JITTER", 0.0, "BACKOFF_RETRY_AFTER_PACING", false}, 8, 0},
		{"pacing off for one scope", []any{"BACKOFF_JITTER", 0.0, "THROTTLING_SCOPES", map[string]any{
			"example.com": map[string]any{"backoff": map[string]any{"retry_after_pacing": false}}}}, 8, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newSM(t, "example.com", tt.kv...)
			sent := sendAll(m, t0)
			resp := t0.Add(10 * time.Millisecond)
			for range sent {
				m.RecordDone(resp)
			}
			m.RecordBackoff(resp, BackoffSignal{SentAt: t0, Delay: sec})
			if w := m.CanSend(resp, 0); !approx(w, sec) {
				t.Fatalf("wait right after Retry-After = %v, want the 1s hard minimum", w)
			}
			if got := m.Pace(); got != tt.wantPace {
				t.Fatalf("pace = %v, want %v", got, tt.wantPace)
			}
			end := resp.Add(sec)
			if got := sendAll(m, end); got != tt.wantBurst {
				t.Fatalf("%d requests left together when the hard delay ended, want %d", got, tt.wantBurst)
			}
			if tt.wantPace == 0 {
				return
			}
			if w := m.CanSend(end, 0); !approx(w, tt.wantPace) {
				t.Fatalf("next send waits %v, want the pace %v", w, tt.wantPace)
			}
		})
	}
}

func TestRetryAfterPaceRecoversPerQuietWindow(t *testing.T) {
	m := newSM(t, "example.com", "BACKOFF_JITTER", 0.0, "BACKOFF_WINDOW", 10.0)
	m.RecordSent(t0, 0)
	m.RecordDone(t0)
	m.RecordBackoff(t0, BackoffSignal{SentAt: t0, Delay: 2 * sec}) // 2s over 8 slots
	steps := []struct {
		at   time.Duration
		want time.Duration
	}{
		{9 * sec, 250 * time.Millisecond},
		{10 * sec, 125 * time.Millisecond},
		{25 * sec, 62500 * time.Microsecond},
		{90 * sec, 0}, // 62.5 ms halves below 1 ms after seven more windows
	}
	for _, s := range steps {
		m.CanSend(t0.Add(s.at), 0)
		if got := m.Pace(); got != s.want {
			t.Fatalf("pace after %v = %v, want %v", s.at, got, s.want)
		}
	}
	if !m.IsIdle(t0.Add(90*sec), 0) {
		t.Fatal("a scope whose pace recovered is not idle")
	}
}

func TestDelayScopeDoesNotPace(t *testing.T) {
	m := newSM(t, "example.com")
	m.RecordBackoff(t0, BackoffSignal{Delay: 30 * sec, Uncapped: true})
	if m.Pace() != 0 {
		t.Fatalf("DelayScope set a pace of %v; it is a one-off hold", m.Pace())
	}
}

// A snapshot already includes the recovery up to it: restoring must not
// count the same quiet windows again.
func TestRetryAfterPaceSnapshotRestore(t *testing.T) {
	m := newSM(t, "example.com", "BACKOFF_JITTER", 0.0)
	m.RecordBackoff(t0, BackoffSignal{SentAt: t0, Delay: 80 * sec}) // 80s over 8 slots: 10s
	snap := m.Snapshot(t0.Add(150 * sec))                           // two quiet windows: 2.5s
	if got := durationOf(snap.Pace); got != 2500*time.Millisecond {
		t.Fatalf("saved pace = %v, want 2.5s", got)
	}
	r := newSM(t, "example.com", "BACKOFF_JITTER", 0.0)
	r.Restore(t0.Add(155*sec), snap)
	if got := r.Pace(); got != 2500*time.Millisecond {
		t.Fatalf("restored pace = %v, want the saved 2.5s", got)
	}
	r.CanSend(t0.Add(180*sec), 0) // the third window ends at t0+180s
	if got := r.Pace(); got != 1250*time.Millisecond {
		t.Fatalf("pace after the next quiet window = %v, want 1.25s", got)
	}
	off := newSM(t, "example.com", "BACKOFF_RETRY_AFTER_PACING", false)
	off.Restore(t0.Add(155*sec), snap)
	if off.Pace() != 0 {
		t.Fatalf("pacing is off but the restored scope paces at %v", off.Pace())
	}
}
