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
		{"8 sends in the last second: resume at 8/s", []any{"BACKOFF_JITTER", 0.0}, 1, 125 * time.Millisecond},
		{"4 sends in the last second: resume at 4/s", []any{"BACKOFF_JITTER", 0.0, "CONCURRENT_REQUESTS_PER_DOMAIN", 4}, 1, 250 * time.Millisecond},
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
			if got := m.Pace(); !near(got, tt.wantPace) {
				t.Fatalf("pace = %v, want %v", got, tt.wantPace)
			}
			end := resp.Add(sec)
			if got := sendAll(m, end); got != tt.wantBurst {
				t.Fatalf("%d requests left together when the hard delay ended, want %d", got, tt.wantBurst)
			}
			if tt.wantPace == 0 {
				return
			}
			if w := m.CanSend(end, 0); !near(w, tt.wantPace) {
				t.Fatalf("next send waits %v, want the pace %v", w, tt.wantPace)
			}
		})
	}
}

func TestRetryAfterPaceRecoversPerQuietWindow(t *testing.T) {
	m := newSM(t, "example.com", "BACKOFF_JITTER", 0.0, "BACKOFF_WINDOW", 10.0)
	m.RecordSent(t0, 0)
	m.RecordDone(t0)
	m.RecordBackoff(t0, BackoffSignal{SentAt: t0, Delay: 2 * sec}) // one send in the last second: 1s pace
	steps := []struct {
		at   time.Duration
		want time.Duration
	}{
		{9 * sec, sec},
		{10 * sec, 500 * time.Millisecond},
		{25 * sec, 250 * time.Millisecond},
		{100 * sec, 0}, // 1 s halves below 1 ms after ten windows
	}
	for _, s := range steps {
		m.CanSend(t0.Add(s.at), 0)
		if got := m.Pace(); got != s.want {
			t.Fatalf("pace after %v = %v, want %v", s.at, got, s.want)
		}
	}
	if !m.IsIdle(t0.Add(100*sec), 0) {
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
	m := newSM(t, "example.com", "BACKOFF_JITTER", 0.0, "CONCURRENT_REQUESTS_PER_DOMAIN", 4)
	sendAll(m, t0)                                                  // 4 sends at t0: 4/s
	m.RecordBackoff(t0, BackoffSignal{SentAt: t0, Delay: 80 * sec}) // pace 250 ms
	snap := m.Snapshot(t0.Add(150 * sec))                           // two quiet windows: 62.5 ms
	if got := durationOf(snap.Pace); !near(got, 62500*time.Microsecond) {
		t.Fatalf("saved pace = %v, want 62.5ms", got)
	}
	r := newSM(t, "example.com", "BACKOFF_JITTER", 0.0)
	r.Restore(t0.Add(155*sec), snap)
	if got := r.Pace(); !near(got, 62500*time.Microsecond) {
		t.Fatalf("restored pace = %v, want the saved 62.5ms", got)
	}
	r.CanSend(t0.Add(180*sec), 0) // the third window ends at t0+180s
	if got := r.Pace(); !near(got, 31250*time.Microsecond) {
		t.Fatalf("pace after the next quiet window = %v, want 31.25ms", got)
	}
	off := newSM(t, "example.com", "BACKOFF_RETRY_AFTER_PACING", false)
	off.Restore(t0.Add(155*sec), snap)
	if off.Pace() != 0 {
		t.Fatalf("pacing is off but the restored scope paces at %v", off.Pace())
	}
}

// A server delay for a request sent after the pace was set means the paced
// rate is still too high: the pace grows one factor step. Server delays for
// requests sent before it (the same burst) do not grow it again.
func TestRetryAfterPaceGrowsOnLaterTriggers(t *testing.T) {
	m := newSM(t, "example.com", "BACKOFF_JITTER", 0.0)
	sendAll(m, t0) // 8 sends: 8/s
	at := t0.Add(10 * time.Millisecond)
	for range 3 { // three 429s of the same burst
		m.RecordDone(at)
		m.RecordBackoff(at, BackoffSignal{SentAt: t0, Delay: sec})
	}
	if got := m.Pace(); !near(got, 125*time.Millisecond) {
		t.Fatalf("pace after one burst = %v, want 125ms", got)
	}
	later := at.Add(2 * sec)
	m.RecordSent(later, 0)
	m.RecordDone(later.Add(time.Millisecond))
	m.RecordBackoff(later.Add(time.Millisecond), BackoffSignal{SentAt: later, Delay: sec})
	if got := m.Pace(); !near(got, 250*time.Millisecond) {
		t.Fatalf("pace after a 429 to a paced request = %v, want 250ms", got)
	}
}

// near reports whether got is within 2% of want (paces come from a measured
// send rate, whose window has just begun in these tests).
func near(got, want time.Duration) bool {
	d := float64(got - want)
	return d >= -0.02*float64(want) && d <= 0.02*float64(want)
}
