package metrics

import "github.com/gocrawl/gocrawl/throttling"

// stateOf reads one scope's state from the throttler.
// TODO(view): use Throttler.View once it is on main.
func stateOf(t *throttling.Throttler, scope string) (ScopeState, bool) {
	return ScopeState{}, false
}
