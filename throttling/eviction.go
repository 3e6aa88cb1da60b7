package throttling

import "time"

// Memory bounds. Every scope's state is an entry in a map and in a list
// ordered by last use. Two rules evict idle entries (ScopeManager.IsIdle:
// nothing in flight, no backoff, no pending delay or quota window):
//
//   - THROTTLING_SCOPE_LIMIT: after a new scope is created beyond the
//     limit, the least recently used idle scopes are evicted until the
//     count is back at the limit. Busy scopes are skipped, so the limit
//     may be exceeded while that many scopes are busy.
//   - THROTTLING_SCOPE_MAX_IDLE: scopes unused for that long are evicted by
//     a sweep that Throttler.Done runs at most every MaxIdle/8 (and at
//     least once per completed request after that). Throttler.Sweep runs
//     both rules on demand, for a crawl whose requests stopped completing.
//
// An evicted scope is recreated from its configuration (and its robots.txt
// Crawl-delay, kept separately) the next time it is needed.

// maxEvictScan bounds the work of one eviction pass beyond the entries
// actually evicted, so a crowd of busy scopes at the LRU end cannot make
// every creation scan them all.
const maxEvictScan = 64

// evictLocked enforces THROTTLING_SCOPE_LIMIT, never evicting keep (the
// entry being created, which its caller is about to use; nil for none).
// Callers hold t.mu.
func (t *Throttler) evictLocked(now time.Time, keep *scopeEntry) {
	limit := t.cfg.ScopeLimit
	if limit <= 0 || len(t.scopes) <= limit {
		return
	}
	scanned := 0
	for el := t.lru.Back(); el != nil && len(t.scopes) > limit && scanned < maxEvictScan+2*(len(t.scopes)-limit); {
		prev := el.Prev()
		e := el.Value.(*scopeEntry)
		switch {
		case e == keep:
			// Not necessarily at the front any more: busy entries are moved
			// there below.
		case e.mgr.IsIdle(now, 0):
			t.removeLocked(e)
		default:
			// Busy: move it out of the way so the next pass does not scan
			// it again (its last-use time is kept for the idle sweep).
			t.lru.MoveToFront(el)
		}
		scanned++
		el = prev
	}
}

// Sweep evicts idle scope states as of the throttler clock's now: those
// unused for THROTTLING_SCOPE_MAX_IDLE, then, while more than
// THROTTLING_SCOPE_LIMIT states are held, the least recently used idle
// ones. It returns how many were evicted. Done runs the same sweep by
// itself, at most every MaxIdle/8; Sweep runs it whenever called, for
// example from a periodic report or when no request completes for a while.
// Safe to call while the crawl runs.
func (t *Throttler) Sweep() int {
	now := t.clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	before := t.evictions
	t.sweepLocked(now)
	t.evictLocked(now, nil)
	return int(t.evictions - before)
}

// sweepDueLocked runs sweepLocked when MaxIdle/8 has passed since the last
// sweep. Callers hold t.mu.
func (t *Throttler) sweepDueLocked(now time.Time) {
	if t.cfg.MaxIdle <= 0 || now.Sub(t.lastSweep) < max(t.cfg.MaxIdle/8, time.Millisecond) {
		return
	}
	t.sweepLocked(now)
}

// sweepLocked enforces THROTTLING_SCOPE_MAX_IDLE. Callers hold t.mu.
func (t *Throttler) sweepLocked(now time.Time) {
	maxIdle := t.cfg.MaxIdle
	if maxIdle <= 0 {
		return
	}
	t.lastSweep = now
	n := t.lru.Len()
	for el := t.lru.Back(); el != nil && n > 0; n-- {
		prev := el.Prev()
		e := el.Value.(*scopeEntry)
		if now.Sub(e.touched) < maxIdle {
			break // the rest were used more recently
		}
		if e.mgr.IsIdle(now, maxIdle) {
			t.removeLocked(e)
		}
		el = prev
	}
}

func (t *Throttler) removeLocked(e *scopeEntry) {
	t.lru.Remove(e.elem)
	delete(t.scopes, e.name)
	t.evictions++
	t.dbg.Info().Str("scope", e.name).Str("reason", "evicted").Msg("throttling: idle scope state evicted")
	for _, fn := range t.onEvict {
		fn(e.name)
	}
}

// OnEvict registers fn to be called with the name of every scope whose
// state is evicted (an idle scope: nothing in flight, no backoff). The
// engine closes the evicted host's idle connections with it
// (downloader.Downloader.CloseHost). fn is called with the throttler's
// lock held: it must be quick and must not call back into the throttler.
func (t *Throttler) OnEvict(fn func(scope string)) {
	t.mu.Lock()
	t.onEvict = append(t.onEvict, fn)
	t.mu.Unlock()
}

// Len returns the number of scope states held in memory.
func (t *Throttler) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.scopes)
}

// Evictions returns how many scope states were evicted so far.
func (t *Throttler) Evictions() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.evictions
}
