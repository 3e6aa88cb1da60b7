package throttling

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
)

// THROTTLING_DEBUG logs one structured line per decision with the scope,
// delay, level and reason; without it the throttler is silent.
func TestThrottlingDebugLines(t *testing.T) {
	for _, debug := range []bool{false, true} {
		var buf bytes.Buffer
		fc := clock.NewFake(t0)
		th, err := New(testSettings(t, "THROTTLING_DEBUG", debug, "BACKOFF_WINDOW", 10.0),
			Options{Clock: fc, Log: zerolog.New(&buf), Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		sc := scopesOf("example.com")
		th.Sent(fc.Now(), sc)
		th.mu.Lock()
		th.scopes["example.com"].mgr.RecordBackoff(fc.Now(), BackoffSignal{SentAt: fc.Now()}) // step
		th.mu.Unlock()
		fc.Advance(10 * sec)
		th.Wait(fc.Now(), sc) // recovery
		th.DelayScope("example.com", 5*sec)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if !debug {
			if buf.Len() != 0 {
				t.Fatalf("THROTTLING_DEBUG off, yet logged: %s", buf.String())
			}
			continue
		}
		reasons := map[string]bool{}
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("not a JSON line: %q", l)
			}
			for _, k := range []string{"scope", "delay", "level", "reason"} {
				if _, ok := m[k]; !ok {
					t.Errorf("line %s lacks %q", l, k)
				}
			}
			reasons[m["reason"].(string)] = true
		}
		for _, r := range []string{"backoff", "recovery", "hard_delay"} {
			if !reasons[r] {
				t.Errorf("no %q line in %q", r, lines)
			}
		}
	}
}
