package throttling

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A policy's state survives JSON exactly: a policy rebuilt from it gives
// the same gate parameters and the same state again.
func TestPolicyStateRoundTrip(t *testing.T) {
	configs := []struct {
		name string
		kv   []any
	}{
		{"backoff and pace", []any{"BACKOFF_WINDOW", 10.0}},
		{"rampup", []any{"BACKOFF_WINDOW", 10.0, "THROTTLING_SCOPES", map[string]any{"example.com": map[string]any{
			"delay": 1.0, "concurrency": 4, "rampup": map[string]any{"min_delay": 0.1}}}}},
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			m := newSM(t, "example.com", c.kv...)
			now := t0
			for i := range 40 { // sends, a few triggers and a Retry-After
				now = now.Add(700 * time.Millisecond)
				if m.CanSend(now, 0) == 0 {
					m.RecordSent(now, 0)
				}
				o := Outcome{Class: OutcomeOK, Latency: 20 * time.Millisecond}
				switch i {
				case 7, 8:
					o = Outcome{Class: OutcomeRefused, Signal: Signal{Trigger: true, SentAt: now.Add(-time.Second)}}
				case 20:
					o = Outcome{Class: OutcomeRefused, Signal: Signal{Trigger: true, SentAt: now, Delay: 2 * sec}}
				}
				m.RecordOutcome(now.Add(20*time.Millisecond), o)
			}
			m.tick(now)
			raw, err := json.Marshal(m.policy.State())
			if err != nil {
				t.Fatal(err)
			}
			var s PolicyState
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			r := NewPolicy(ScopeEnv{Config: m.policy.cfg})
			if err := r.SetState(s); err != nil {
				t.Fatal(err)
			}
			if got, want := r.State(), m.policy.State(); !reflect.DeepEqual(got, want) {
				t.Fatalf("state after a JSON round trip:\n got %+v\nwant %+v", got, want)
			}
			if got, want := r.Params(now), m.policy.Params(now); got != want {
				t.Fatalf("params after a JSON round trip:\n got %+v\nwant %+v", got, want)
			}
			if reflect.DeepEqual(m.policy.State(), PolicyState{Version: PolicyStateVersion}) {
				t.Fatal("the scenario left no state to round-trip")
			}
		})
	}
}

func TestPolicyStateFromNewerVersionRefused(t *testing.T) {
	p := NewPolicy(ScopeEnv{Config: newSM(t, "example.com").policy.cfg})
	err := p.SetState(PolicyState{Version: PolicyStateVersion + 1, Level: 3})
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("SetState of a newer version: %v, want an error", err)
	}
	if p.Level() != 0 {
		t.Fatalf("a refused state was applied (level %d)", p.Level())
	}
}

// ValidUntil names the next time-based change: a parameter derived after
// it differs, one derived just before it does not.
func TestPolicyValidUntil(t *testing.T) {
	m := newSM(t, "example.com", "BACKOFF_WINDOW", 10.0)
	if vu := m.policy.Params(t0).ValidUntil; !vu.IsZero() {
		t.Fatalf("a scope in its configured state is valid until %v, want zero (until the next feedback)", vu)
	}
	m.RecordSent(t0, 0)
	m.RecordOutcome(t0.Add(sec), Outcome{Class: OutcomeRefused, Signal: Signal{Trigger: true, SentAt: t0}})
	p := m.policy.Params(t0.Add(sec))
	if !p.ValidUntil.Equal(t0.Add(11 * sec)) {
		t.Fatalf("after a step at t0+1s: valid until %v, want t0+11s (the end of the quiet window)", p.ValidUntil.Sub(t0))
	}
	m.tick(p.ValidUntil.Add(-time.Nanosecond))
	if got := m.policy.Params(p.ValidUntil.Add(-time.Nanosecond)); got.Delay != p.Delay {
		t.Fatalf("delay changed before ValidUntil: %v -> %v", p.Delay, got.Delay)
	}
	m.tick(p.ValidUntil)
	if got := m.policy.Params(p.ValidUntil); got.Delay == p.Delay {
		t.Fatalf("delay still %v at ValidUntil", got.Delay)
	}
	r := newSM(t, "api", "THROTTLING_SCOPES", map[string]any{"api": map[string]any{"rampup": true}})
	if vu := r.policy.Params(t0).ValidUntil; vu.After(t0) {
		t.Fatalf("a rampup policy never ticked is valid until %v, want stale at once", vu)
	}
	r.tick(t0)
	if vu := r.policy.Params(t0).ValidUntil; !vu.Equal(t0.Add(60 * sec)) {
		t.Fatalf("rampup window from t0: valid until %v, want t0+60s", vu.Sub(t0))
	}
}

// JOBDIRs written before ScopeSnapshot.Policy existed restore from the
// flat fields.
func TestRestoreLegacySnapshot(t *testing.T) {
	raw := `{"scope":"example.com","delay":4,"backoff_level":3,"last_trigger":"2026-01-01T00:00:00Z",
		"last_step":"2026-01-01T00:00:00Z","concurrency":8,"pace":0.25,"quiet_mark":"2026-01-01T00:00:00Z",
		"pace_mark":"2026-01-01T00:00:00Z"}`
	var s ScopeSnapshot
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	m := newSM(t, "example.com", "BACKOFF_WINDOW", 60.0)
	m.Restore(t0.Add(30*sec), s)
	if m.Level() != 3 || m.Delay() != 4*sec || m.Pace() != 250*time.Millisecond {
		t.Fatalf("restored level %d delay %v pace %v, want 3, 4s, 250ms", m.Level(), m.Delay(), m.Pace())
	}
	m.CanSend(t0.Add(60*sec), 0)
	if m.Level() != 2 {
		t.Fatalf("level %d one quiet window after the saved mark, want 2", m.Level())
	}
}
