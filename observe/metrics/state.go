package metrics

import "github.com/gocrawl/gocrawl/throttling"

// stateOf reads one scope's state from the throttler's read-only view
// (Throttler.View: it neither creates the scope nor keeps it from being
// evicted). A scope the throttler no longer holds is described from its
// configuration.
func stateOf(t *throttling.Throttler, scope string) (ScopeState, bool) {
	v := t.View(scope)
	return ScopeState{
		Delay:                 v.Delay,
		BackoffLevel:          v.BackoffLevel,
		Concurrency:           v.Concurrency,
		ConfiguredDelay:       v.ConfiguredDelay,
		ConfiguredConcurrency: v.ConfiguredConcurrency,
	}, true
}
