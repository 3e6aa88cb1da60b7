package render

import (
	"context"
	"sync"
)

// tabPool holds the idle tabs. A render takes a tab already set up for its
// proxy when there is one, so that a crawl rotating over proxies does not
// reopen a tab (a new browser context) for every page.
type tabPool struct {
	mu      sync.Mutex
	free    []*tab
	changed chan struct{} // closed and replaced when a tab comes back
}

func newTabPool() *tabPool { return &tabPool{changed: make(chan struct{})} }

// get takes an idle tab, preferring one whose browser context uses proxy,
// then one that was never opened, then the one idle longest. It waits
// while every tab is busy, until ctx or closed ends.
func (p *tabPool) get(ctx context.Context, proxy string, closed <-chan struct{}) (*tab, error) {
	for {
		p.mu.Lock()
		if i := p.pick(proxy); i >= 0 {
			t := p.free[i]
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.mu.Unlock()
			return t, nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-closed:
			return nil, ErrClosed
		case <-ch:
		}
	}
}

// pick returns the index of the tab get takes, or -1 (the caller holds
// p.mu). free is ordered from the longest idle.
func (p *tabPool) pick(proxy string) int {
	if len(p.free) == 0 {
		return -1
	}
	unopened := -1
	for i, t := range p.free {
		open := t.context() != nil
		if open && t.proxy == proxy {
			return i
		}
		if unopened < 0 && !open {
			unopened = i
		}
	}
	if unopened >= 0 {
		return unopened
	}
	return 0
}

// put gives a tab back.
func (p *tabPool) put(t *tab) {
	p.mu.Lock()
	p.free = append(p.free, t)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// drain waits until n tabs are idle and returns them, emptying the pool.
func (p *tabPool) drain(n int) []*tab {
	for {
		p.mu.Lock()
		if len(p.free) >= n {
			out := p.free
			p.free = nil
			p.mu.Unlock()
			return out
		}
		ch := p.changed
		p.mu.Unlock()
		<-ch
	}
}
