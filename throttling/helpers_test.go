package throttling

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const sec = time.Second

// testSettings returns defaults overridden by kv (name, value, ...), with
// jitter and the rate controller off unless kv sets them: unit tests of one
// rule see that rule alone (ratecontrol_test.go turns the controller on).
func testSettings(t testing.TB, kv ...any) *settings.Settings {
	t.Helper()
	s := settings.New()
	set := func(k string, v any) {
		if err := s.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	set("RANDOMIZE_DOWNLOAD_DELAY", false)
	set("BACKOFF_JITTER", 0.0)
	set("THROTTLING_RATE_CONTROL", false)
	for i := 0; i+1 < len(kv); i += 2 {
		set(kv[i].(string), kv[i+1])
	}
	return s
}

// newTestThrottler returns a throttler on a fake clock at t0.
func newTestThrottler(t testing.TB, kv ...any) (*Throttler, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(t0)
	th, err := New(testSettings(t, kv...), Options{Clock: fc, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	return th, fc
}

// newSM returns the default scope manager of scope under the settings kv.
func newSM(t testing.TB, scope string, kv ...any) *ThrottlingScopeManager {
	t.Helper()
	cfg, err := ReadConfig(testSettings(t, kv...))
	if err != nil {
		t.Fatal(err)
	}
	return NewThrottlingScopeManager(ScopeEnv{Config: cfg.Scope(scope), Rand: rand.New(rand.NewPCG(1, 2))})
}

func scopesOf(names ...string) Scopes {
	var s Scopes
	for _, n := range names {
		s = AddScope(s, n, 0)
	}
	return s
}

// waitUntil polls cond (real time) until it holds, failing the test with
// what it was waiting for after 10 s.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 10 s waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func approx(a, b time.Duration) bool {
	d := a - b
	return d > -time.Millisecond && d < time.Millisecond
}
