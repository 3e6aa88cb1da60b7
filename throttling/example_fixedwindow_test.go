package throttling_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/throttling"
)

// FixedWindowScopeManager enforces a fixed quota per time window without
// delay or exponential backoff, like a fixed-window rate limiter (the
// "Customizing throttling scope managers" example of Scrapy's throttling
// design, PR #6931). It implements the whole
// throttling.ScopeManager interface; the throttler serialises calls.
type FixedWindowScopeManager struct {
	limit   float64
	window  time.Duration
	resetAt time.Time
	used    float64
	active  int
}

func NewFixedWindowScopeManager(env throttling.ScopeEnv) (throttling.ScopeManager, error) {
	if env.Config.Quota <= 0 {
		return nil, errors.New(`FixedWindowScopeManager needs a positive "quota"`)
	}
	return &FixedWindowScopeManager{limit: env.Config.Quota, window: env.Config.Window}, nil
}

func (m *FixedWindowScopeManager) CanSend(now time.Time, amount float64) time.Duration {
	if !m.resetAt.IsZero() && !now.Before(m.resetAt) {
		m.resetAt, m.used = time.Time{}, 0
	}
	if m.used > 0 && m.used+amount > m.limit {
		return m.resetAt.Sub(now)
	}
	return 0
}

func (m *FixedWindowScopeManager) RecordSent(now time.Time, amount float64) {
	if m.resetAt.IsZero() {
		m.resetAt = now.Add(m.window)
	}
	m.used += amount
	m.active++
}

func (m *FixedWindowScopeManager) RecordDone(now time.Time) { m.active = max(0, m.active-1) }

func (m *FixedWindowScopeManager) RecordBackoff(now time.Time, sig throttling.BackoffSignal) {} // no backoff

func (m *FixedWindowScopeManager) ReconcileQuota(now time.Time, consumed, remaining *float64) {
	switch {
	case remaining != nil:
		m.used = max(0, m.limit-*remaining)
	case consumed != nil:
		m.used = max(0, m.used+*consumed)
	}
}

func (m *FixedWindowScopeManager) SetBaseDelay(d time.Duration) {}
func (m *FixedWindowScopeManager) SetConcurrency(n int)         {}

func (m *FixedWindowScopeManager) IsIdle(now time.Time, maxIdle time.Duration) bool {
	return m.active == 0 && (m.resetAt.IsZero() || !now.Before(m.resetAt))
}

func init() {
	throttling.RegisterScopeManager("FixedWindowScopeManager", NewFixedWindowScopeManager)
}

// In gocrawl.yaml, for one scope:
//
//	THROTTLING_SCOPES:
//	  api.toscrape.com: {manager: FixedWindowScopeManager, quota: 3, window: 10}
//
// (or THROTTLING_SCOPE_MANAGER: FixedWindowScopeManager for every scope).
// Requests to api.toscrape.com consume 1 each through the
// throttling_scopes meta: {"api.toscrape.com": 1}.
func Example_fixedWindowScopeManager() {
	s := settings.New()
	_ = s.SetMap(map[string]any{"THROTTLING_SCOPES": map[string]any{
		"api.toscrape.com": map[string]any{"manager": "FixedWindowScopeManager", "quota": 3, "window": 10},
	}}, settings.SourceFile, "gocrawl.yaml")
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t, err := throttling.New(s, throttling.Options{Clock: fc})
	if err != nil {
		panic(err)
	}
	scopes := throttling.Scopes{{Name: "api.toscrape.com", Amount: 1}}
	for i := range 5 {
		w := t.Wait(fc.Now(), scopes)
		fmt.Printf("request %d waits %v\n", i+1, w)
		fc.Advance(w)
		t.Sent(fc.Now(), scopes)
	}

	// A scope manager that rejects its configuration fails at start-up.
	_ = s.Set("THROTTLING_SCOPES", map[string]any{"other": map[string]any{"manager": "FixedWindowScopeManager"}}, settings.SourceFile, "gocrawl.yaml")
	_, err = throttling.New(s, throttling.Options{})
	fmt.Println(err)
	// Output:
	// request 1 waits 0s
	// request 2 waits 0s
	// request 3 waits 0s
	// request 4 waits 10s
	// request 5 waits 0s
	// THROTTLING_SCOPES: scope "other": key "manager": scope manager "FixedWindowScopeManager": FixedWindowScopeManager needs a positive "quota"
}
