package pqueue_test

import (
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/throttling"
)

// fakeGate is a deterministic throttler for queue tests: each scope has a
// concurrency limit (0 = unlimited), a delay between sends, an optional
// blocked-until time (backoff), and a quota share.
type fakeGate struct {
	mu       sync.Mutex
	scopes   map[string]*fakeScope
	watchers []func(string)
	sent     []throttling.Scopes
}

type fakeScope struct {
	limit    int
	delay    time.Duration
	active   int
	next     time.Time
	until    time.Time
	share    float64
	lastSent time.Time
}

func newFakeGate() *fakeGate { return &fakeGate{scopes: map[string]*fakeScope{}} }

func (g *fakeGate) scope(name string) *fakeScope {
	s := g.scopes[name]
	if s == nil {
		s = &fakeScope{}
		g.scopes[name] = s
	}
	return s
}

// set configures a scope and notifies watchers.
func (g *fakeGate) set(name string, limit int, delay time.Duration) {
	g.mu.Lock()
	s := g.scope(name)
	s.limit, s.delay = limit, delay
	g.notifyLocked(name)
	g.mu.Unlock()
}

// block backs a scope off until t.
func (g *fakeGate) block(name string, t time.Time) {
	g.mu.Lock()
	g.scope(name).until = t
	g.notifyLocked(name)
	g.mu.Unlock()
}

// done frees one slot of each scope.
func (g *fakeGate) done(scopes throttling.Scopes) {
	g.mu.Lock()
	for _, sc := range scopes {
		s := g.scope(sc.Name)
		if s.active > 0 {
			s.active--
		}
		g.notifyLocked(sc.Name)
	}
	g.mu.Unlock()
}

func (g *fakeGate) ScopeWait(now time.Time, scope string, amount float64) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waitLocked(now, scope)
}

func (g *fakeGate) waitLocked(now time.Time, scope string) time.Duration {
	s := g.scope(scope)
	if s.limit > 0 && s.active >= s.limit {
		return throttling.UntilSlotFree
	}
	t := s.next
	if s.until.After(t) {
		t = s.until
	}
	if now.Before(t) {
		return t.Sub(now)
	}
	return 0
}

func (g *fakeGate) ready(now time.Time, scopes throttling.Scopes) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, sc := range scopes {
		if g.waitLocked(now, sc.Name) != 0 {
			return false
		}
	}
	return true
}

func (g *fakeGate) Sent(now time.Time, scopes throttling.Scopes) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, sc := range scopes {
		if g.waitLocked(now, sc.Name) != 0 {
			panic("fakeGate: send on a scope that is not ready: " + sc.Name)
		}
		s := g.scope(sc.Name)
		s.active++
		s.next = now.Add(s.delay)
		s.lastSent = now
		g.notifyLocked(sc.Name)
	}
	g.sent = append(g.sent, scopes)
}

func (g *fakeGate) Watch(fn func(string)) {
	g.mu.Lock()
	g.watchers = append(g.watchers, fn)
	g.mu.Unlock()
}

func (g *fakeGate) notifyLocked(name string) {
	for _, w := range g.watchers {
		w(name)
	}
}

// quotaGate adds QuotaShare to fakeGate.
type quotaGate struct{ *fakeGate }

func (g quotaGate) QuotaShare(scope string, amount float64) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return amount * g.scope(scope).share
}
