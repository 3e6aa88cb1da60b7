package throttling

import (
	"testing"
	"time"
)

func TestRampupSteps(t *testing.T) {
	m := newSM(t, "api.example.com", "BACKOFF_WINDOW", 10.0, "THROTTLING_SCOPES", map[string]any{
		"api.example.com": map[string]any{"delay": 2.0, "concurrency": 4,
			"rampup": map[string]any{"backoff_target": []any{1, 2}, "delay_factor": 0.5, "min_delay": 0.25}},
	})
	type state struct {
		delay time.Duration
		conc  int
	}
	if got := (state{m.Delay(), m.Concurrency()}); got != (state{2 * sec, 1}) {
		t.Fatalf("initial state %+v, want delay 2s at min_concurrency 1", got)
	}
	win := 0
	// window runs one window with one send and k triggers, then evaluates it.
	window := func(k int) state {
		start := t0.Add(time.Duration(win) * 10 * sec)
		win++
		m.RecordSent(start, 0)
		m.RecordDone(start)
		for i := range k {
			at := start.Add(time.Duration(i+1) * sec)
			m.RecordSent(at, 0)
			m.RecordDone(at)
			m.RecordBackoff(at.Add(time.Millisecond), BackoffSignal{SentAt: at})
		}
		m.tick(t0.Add(time.Duration(win) * 10 * sec))
		return state{m.Delay(), m.Concurrency()}
	}
	steps := []struct {
		name     string
		triggers int
		want     state
	}{
		{"below target: lower delay", 0, state{1 * sec, 1}},
		{"below target: lower delay", 0, state{500 * time.Millisecond, 1}},
		{"below target: delay reaches min_delay", 0, state{250 * time.Millisecond, 1}},
		{"below target: raise concurrency", 0, state{250 * time.Millisecond, 2}},
		{"below target: raise concurrency", 0, state{250 * time.Millisecond, 3}},
		{"below target: raise concurrency to the ceiling", 0, state{250 * time.Millisecond, 4}},
		{"below target at the ceiling: nothing to raise", 0, state{250 * time.Millisecond, 4}},
		{"at target low: hold", 1, state{250 * time.Millisecond, 4}},
		{"at target high: hold", 2, state{250 * time.Millisecond, 4}},
		{"above target: back off (concurrency first)", 3, state{250 * time.Millisecond, 2}},
		// triggers 3, 4, 5 step: concurrency 2 -> 1, delay 0.25 -> 1 (BACKOFF_MIN_DELAY) -> 2
		{"well above target: concurrency to the floor, then delay", 5, state{2 * sec, 1}},
		{"below target again: ramp up", 0, state{1 * sec, 1}},
	}
	for i, s := range steps {
		if got := window(s.triggers); got != s.want {
			t.Fatalf("window %d (%s, %d triggers): %+v, want %+v", i+1, s.name, s.triggers, got, s.want)
		}
	}
}

func TestRampupIdleWindowsDoNotRamp(t *testing.T) {
	m := newSM(t, "api.example.com", "BACKOFF_WINDOW", 10.0, "THROTTLING_SCOPES", map[string]any{
		"api.example.com": map[string]any{"delay": 2.0, "rampup": true},
	})
	m.RecordSent(t0, 0)
	m.RecordDone(t0)
	m.tick(t0.Add(10 * time.Minute))
	if m.Delay() != sec {
		t.Fatalf("delay %v after one busy window and many idle ones, want one step (1s)", m.Delay())
	}
}

func TestRampupTargetFromSetting(t *testing.T) {
	cfg, err := ReadConfig(testSettings(t, "RAMPUP_BACKOFF_TARGET", []any{2, 4}, "THROTTLING_SCOPES", map[string]any{
		"a": map[string]any{"rampup": true}, "b": map[string]any{"rampup": map[string]any{"backoff_target": 3}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Scope("a").Rampup; !got.Enabled || got.Target != [2]int{2, 4} || got.DelayFactor != DefaultRampupDelayFactor {
		t.Errorf("scope a rampup = %+v, want enabled, target [2 4], factor %v", got, DefaultRampupDelayFactor)
	}
	if got := cfg.Scope("b").Rampup.Target; got != [2]int{3, 3} {
		t.Errorf("scope b target = %v, want [3 3]", got)
	}
	if cfg.Scope("c").Rampup.Enabled {
		t.Error("rampup enabled on an unconfigured scope")
	}
}
