package pqueue

import (
	"time"

	"github.com/gocrawl/gocrawl/throttling"
)

// This file is ThrottlingAware's index of what blocks what: a group per
// non-empty sub-queue, in the ready heap or parked at the scope that
// blocks its head; a scopeState per blocking scope, with its waiting heap,
// its timer when a delay blocks it, and the multi-scope starvation guard
// (holds). Push, Pop and the store side are in aware.go; the heaps in
// heaps.go. See docs/architecture.md, "Scheduler".

// where a group is.
const (
	inNone = iota
	inReady
	parked
)

// group is a non-empty sub-queue: requests sharing the same scope names.
type group struct {
	key    string
	head   Info    // the store's best entry of the sub-queue
	share  float64 // quota share of the head, when last indexed
	served uint64  // stamp of the last send (0 = never): round-robin
	where  int8
	idx    int         // index in the heap it is in
	at     *scopeState // the scope it is parked at, when parked
	// wokenBy is the scope whose readiness moved the group to the ready
	// heap; when the group turns out blocked elsewhere, that scope must
	// offer its slot to its next waiter.
	wokenBy *scopeState
	// passed is set when the group was woken but found blocked by another
	// scope's concurrency: the first sign of starvation.
	passed bool
	// holds are the scopes reserved for this group while it waits for
	// the others (multi-scope starvation guard).
	holds []*scopeState
}

func (g *group) holder() bool { return len(g.holds) > 0 }

// scopeState is the queue's knowledge of one scope that blocks at least
// one sub-queue or is held for one.
type scopeState struct {
	name    string
	waiting groupHeap // groups parked here, best first
	holders int       // holders among waiting
	heldBy  *group    // group this scope is reserved for, if any
	timer   int       // index in timers, -1 when not there
	readyAt time.Time // when the scope is expected ready for its top waiter
}

// refreshScope offers scope st to its best waiter if st is ready for it,
// or sets its timer. At most one waiter at a time is moved to the ready
// heap: when it is sent the throttler reports st again, when it turns out
// blocked elsewhere park() refreshes st again.
func (q *ThrottlingAware) refreshScope(now time.Time, st *scopeState) {
	for len(st.waiting) > 0 {
		top := st.waiting[0]
		if st.heldBy != nil && st.heldBy != top {
			q.stopTimer(st) // the hold's release refreshes st
			return
		}
		w := q.gate.ScopeWait(now, st.name, amountOf(top.head.Scopes, st.name))
		switch {
		case w == throttling.UntilSlotFree:
			q.stopTimer(st) // a completion will report st
			return
		case w > 0:
			if top.holder() {
				// A delay is no reason to keep other scopes idle.
				q.detach(top)
				q.release(top)
				q.park(now, top, st, w, false)
				continue
			}
			q.setTimer(st, now.Add(w))
			return
		}
		q.detach(top)
		ok, at, wait := q.evaluate(now, top)
		if ok {
			top.wokenBy = st
			q.toReady(top)
			q.stopTimer(st)
			return
		}
		if at == st {
			// Not ready for top after all (a hold or a quota): wait for
			// the next report or for the timer park sets.
			q.stopTimer(st)
			q.park(now, top, at, wait, true)
			return
		}
		q.park(now, top, at, wait, true)
	}
	q.stopTimer(st)
	q.forget(st)
}

// holdBlock is the wait reported by evaluate for a scope reserved for
// another group: it clears when the holder is sent or gives up.
const holdBlock time.Duration = -1

// evaluate reports whether every scope of g's head can send now; if not,
// the scope to park g at and its wait (a delay, UntilSlotFree or
// holdBlock). Scopes held for another group, or awaited by holders while g
// is not one, block g.
func (q *ThrottlingAware) evaluate(now time.Time, g *group) (bool, *scopeState, time.Duration) {
	var worst string
	var worstWait time.Duration
	for _, sc := range g.head.Scopes {
		if st := q.scopes[sc.Name]; st != nil {
			if (st.heldBy != nil && st.heldBy != g) || (st.holders > 0 && !g.holder()) {
				return false, st, holdBlock
			}
		}
		if w := q.gate.ScopeWait(now, sc.Name, sc.Amount); w > worstWait {
			worst, worstWait = sc.Name, w
		}
	}
	if worstWait == 0 {
		return true, nil, 0
	}
	return false, q.scope(worst), worstWait
}

// park puts g in the waiting heap of at, which blocks it for wait. woken
// says g was just offered a free scope (by refreshScope, or by being in the
// ready heap because of one).
func (q *ThrottlingAware) park(now time.Time, g *group, at *scopeState, wait time.Duration, woken bool) {
	prev := q.detach(g)
	from := g.wokenBy
	g.wokenBy = nil
	if len(g.head.Scopes) > 1 {
		q.guardStarvation(now, g, woken, wait)
	}
	g.where, g.at = parked, at
	g.share = q.shareOf(g.head)
	at.waiting.push(g)
	if g.holder() {
		at.holders++
	}
	if wait > 0 && wait != throttling.UntilSlotFree {
		if t := now.Add(wait); at.timer < 0 || t.Before(at.readyAt) {
			q.setTimer(at, t)
		}
	}
	if prev != nil && prev != at {
		q.forget(prev)
	}
	if from != nil && from != at {
		// The scope that woke g is still free: offer it to its next waiter.
		q.refreshScope(now, from)
	}
}

// guardStarvation keeps a multi-scope group from being passed over
// forever by single-scope requests of one of its scopes. A group woken by
// a free scope but blocked by another scope's concurrency is marked; the
// second time, it reserves its free scopes (they serve nobody else) until
// a slot frees in the scope it waits for, where holders go first. A group
// blocked by a delay releases its holds: a delay is no reason to keep
// other scopes idle.
func (q *ThrottlingAware) guardStarvation(now time.Time, g *group, woken bool, wait time.Duration) {
	if wait != throttling.UntilSlotFree {
		q.release(g)
		return
	}
	if !woken {
		return
	}
	if !g.passed {
		g.passed = true
		return
	}
	for _, sc := range g.head.Scopes {
		if st := q.scopes[sc.Name]; st != nil && (st.heldBy != nil || st.holders > 0) {
			continue
		}
		if q.gate.ScopeWait(now, sc.Name, sc.Amount) == 0 {
			st := q.scope(sc.Name)
			st.heldBy = g
			g.holds = append(g.holds, st)
		}
	}
}

// release gives up g's holds and offers the scopes to their waiters.
func (q *ThrottlingAware) release(g *group) {
	if len(g.holds) == 0 {
		return
	}
	holds := g.holds
	g.holds = nil
	for _, st := range holds {
		if st.heldBy == g {
			st.heldBy = nil
		}
		// The next Pop refreshes st: it offers st to its waiters, or
		// forgets it (not here: the caller may be parking g at st).
		q.markDirty(st.name)
	}
}

// shareOf returns the quota share of a head: the largest among its scopes.
func (q *ThrottlingAware) shareOf(in Info) float64 {
	if q.share == nil {
		return 0
	}
	var s float64
	for _, sc := range in.Scopes {
		if sc.Amount > 0 {
			s = max(s, q.share.QuotaShare(sc.Name, sc.Amount))
		}
	}
	return s
}

// toReady puts g in the ready heap.
func (q *ThrottlingAware) toReady(g *group) {
	q.detach(g)
	g.share = q.shareOf(g.head)
	g.where = inReady
	q.ready.push(g)
}

// detach takes g out of whichever heap it is in and returns the scope it
// was parked at, if any (callers forget it once done with it).
func (q *ThrottlingAware) detach(g *group) *scopeState {
	var at *scopeState
	switch g.where {
	case inReady:
		q.ready.remove(g)
	case parked:
		at = g.at
		at.waiting.remove(g)
		if g.holder() {
			at.holders--
		}
		g.at = nil
		if len(at.waiting) == 0 {
			q.stopTimer(at)
		}
	}
	g.where = inNone
	return at
}

// setHead changes g's head and fixes its place.
func (q *ThrottlingAware) setHead(g *group, in Info) {
	g.head = in
	switch g.where {
	case inReady:
		q.ready.fix(g)
	case parked:
		g.at.waiting.fix(g)
	}
}

// scope returns the state of name, creating it.
func (q *ThrottlingAware) scope(name string) *scopeState {
	st := q.scopes[name]
	if st == nil {
		st = &scopeState{name: name, timer: -1}
		q.scopes[name] = st
		q.dirtyMu.Lock()
		q.tracked[name] = struct{}{}
		q.dirtyMu.Unlock()
	}
	return st
}

// forget drops st when nothing refers to it any more.
func (q *ThrottlingAware) forget(st *scopeState) {
	if len(st.waiting) == 0 && st.heldBy == nil && st.timer < 0 && q.scopes[st.name] == st {
		delete(q.scopes, st.name)
		q.dirtyMu.Lock()
		delete(q.tracked, st.name)
		q.dirtyMu.Unlock()
	}
}

func (q *ThrottlingAware) setTimer(st *scopeState, at time.Time) {
	st.readyAt = at
	if st.timer < 0 {
		q.timers.push(st)
	} else {
		q.timers.fix(st)
	}
}

func (q *ThrottlingAware) stopTimer(st *scopeState) {
	if st.timer >= 0 {
		q.timers.remove(st)
	}
}

func amountOf(scopes throttling.Scopes, name string) float64 {
	for _, s := range scopes {
		if s.Name == name {
			return s.Amount
		}
	}
	return 0
}
