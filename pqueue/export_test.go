package pqueue

import "fmt"

// CheckInvariants verifies the index of a ThrottlingAware queue, for tests.
func (q *ThrottlingAware) CheckInvariants() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, g := range q.ready {
		if g.idx != i || g.where != inReady {
			return fmt.Errorf("ready[%d] = %q with idx %d where %d", i, g.key, g.idx, g.where)
		}
	}
	for name, st := range q.scopes {
		if st.name != name {
			return fmt.Errorf("scope %q stored as %q", st.name, name)
		}
		holders := 0
		for i, g := range st.waiting {
			if g.idx != i || g.where != parked || g.at != st {
				return fmt.Errorf("scope %q waiting[%d] = %q with idx %d where %d", name, i, g.key, g.idx, g.where)
			}
			if g.holder() {
				holders++
			}
		}
		if holders != st.holders {
			return fmt.Errorf("scope %q counts %d holders, has %d", name, st.holders, holders)
		}
		if st.heldBy != nil && q.groups[st.heldBy.key] != st.heldBy {
			return fmt.Errorf("scope %q held by a forgotten group %q", name, st.heldBy.key)
		}
		if st.timer >= 0 && (st.timer >= len(q.timers) || q.timers[st.timer] != st) {
			return fmt.Errorf("scope %q timer index %d is wrong", name, st.timer)
		}
	}
	for key, g := range q.groups {
		switch g.where {
		case inReady:
		case parked:
			if q.scopes[g.at.name] != g.at {
				return fmt.Errorf("group %q parked at scope %q which is not indexed", key, g.at.name)
			}
		default:
			return fmt.Errorf("group %q is in no heap", key)
		}
		for _, st := range g.holds {
			if st.heldBy != g {
				return fmt.Errorf("group %q thinks it holds %q, held by %v", key, st.name, st.heldBy)
			}
			if q.scopes[st.name] != st {
				return fmt.Errorf("group %q holds scope %q which is not indexed", key, st.name)
			}
		}
	}
	return nil
}
