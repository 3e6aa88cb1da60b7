package throttling

import (
	"context"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/gocrawl/gocrawl/spider"
)

// FeedbackOption changes one scope's entry in a Feedback (see
// UpdateScopeBackoff).
type FeedbackOption func(*ScopeFeedback)

// Consumed corrects the scope's quota use by delta (actual - estimated
// cost): positive when the request cost more than estimated.
func Consumed(delta float64) FeedbackOption {
	return func(f *ScopeFeedback) { f.Consumed = &delta }
}

// Remaining sets the quota left in the scope's current window, as reported
// by the server.
func Remaining(left float64) FeedbackOption {
	return func(f *ScopeFeedback) { f.Remaining = &left }
}

// Trigger marks the outcome as a backoff trigger for the scope, with an
// optional hard minimum delay (0 = a normal backoff step).
func Trigger(delay time.Duration) FeedbackOption {
	return func(f *ScopeFeedback) { f.Trigger, f.Delay = true, delay }
}

// UpdateScopeBackoff returns fb with the entry of scope changed by opts,
// creating fb and the entry as needed. It is the Go form of the
// update_scope_backoff helper of Scrapy's throttling design (PR #6931),
// for use in ResponseBackoff:
//
//	fb, err := m.DefaultManager.ResponseBackoff(ctx, res, scopes)
//	return throttling.UpdateScopeBackoff(fb, "cost", throttling.Consumed(actual-estimated)), err
func UpdateScopeBackoff(fb Feedback, scope string, opts ...FeedbackOption) Feedback {
	if fb == nil {
		fb = Feedback{}
	}
	f := fb[scope]
	for _, o := range opts {
		o(&f)
	}
	fb[scope] = f
	return fb
}

// CacheScopes wraps m so that Scopes runs once per request: later calls
// with the same *spider.Request return the first answer. It is the Go form
// of the scope_cache decorator of Scrapy's throttling design (PR #6931);
// use it when Scopes is costly
// (parsing, lookups) or must stay stable for a request. Entries go away
// with their request (weak references), so the cache never grows with the
// crawl. ResponseBackoff and ExceptionBackoff pass through.
func CacheScopes(m Manager) Manager {
	return &scopeCache{Manager: m, cache: map[weak.Pointer[spider.Request]]Scopes{}}
}

type scopeCache struct {
	Manager
	mu    sync.Mutex
	cache map[weak.Pointer[spider.Request]]Scopes
}

func (c *scopeCache) Scopes(ctx context.Context, req *spider.Request) (Scopes, error) {
	key := weak.Make(req)
	c.mu.Lock()
	sc, ok := c.cache[key]
	c.mu.Unlock()
	if ok {
		return sc, nil
	}
	sc, err := c.Manager.Scopes(ctx, req)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if _, dup := c.cache[key]; !dup {
		c.cache[key] = sc
		runtime.AddCleanup(req, func(k weak.Pointer[spider.Request]) {
			c.mu.Lock()
			delete(c.cache, k)
			c.mu.Unlock()
		}, key)
	}
	c.mu.Unlock()
	return sc, nil
}

// Len returns the number of cached requests (for tests).
func (c *scopeCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cache)
}
