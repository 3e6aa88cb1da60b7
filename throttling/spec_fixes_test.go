package throttling

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// A robots.txt Crawl-delay only raises the delay: with DOWNLOAD_DELAY 5,
// Crawl-delay 2 keeps 5 (and sets concurrency 1); Crawl-delay 8 raises it.
func TestRobotsCrawlDelayOnlyRaises(t *testing.T) {
	th, _ := newTestThrottler(t, "DOWNLOAD_DELAY", 5.0)
	for _, tt := range []struct {
		scope string
		crawl time.Duration
		want  time.Duration
	}{
		{"lower.example", 2 * sec, 5 * sec},
		{"higher.example", 8 * sec, 8 * sec},
	} {
		th.Wait(t0, scopesOf(tt.scope))
		th.SetRobotsDelay(tt.scope, tt.crawl)
		m := th.scopes[tt.scope].mgr.(*ThrottlingScopeManager)
		if m.Delay() != tt.want || m.Concurrency() != 1 {
			t.Errorf("%s, Crawl-delay %v: delay %v concurrency %d, want %v and 1", tt.scope, tt.crawl, m.Delay(), m.Concurrency(), tt.want)
		}
		if v := th.View(tt.scope); durationOf(v.Delay) != tt.want {
			t.Errorf("%s: view delay %v, want %v", tt.scope, v.Delay, tt.want)
		}
	}
	// A rampup scope's floor follows the same rule.
	r, _ := newTestThrottler(t, "DOWNLOAD_DELAY", 5.0, "THROTTLING_SCOPES", map[string]any{"ramp.example": map[string]any{"rampup": true}})
	r.Wait(t0, scopesOf("ramp.example"))
	r.SetRobotsDelay("ramp.example", 2*sec)
	if m := r.scopes["ramp.example"].mgr.(*ThrottlingScopeManager); m.policy.rampFloor != 5*sec || m.Delay() != 5*sec {
		t.Errorf("rampup scope: floor %v delay %v, want 5s", m.policy.rampFloor, m.Delay())
	}
}

// A rampup scope without concurrency has no ceiling of its own: it starts
// at min_concurrency, whatever its kind's default, and grows past it.
func TestRampupWithoutConcurrencyHasNoCeiling(t *testing.T) {
	m := newSM(t, "api", "BACKOFF_WINDOW", 1.0, "THROTTLING_SCOPES", map[string]any{
		"api": map[string]any{"rampup": true, "min_concurrency": 3}})
	if m.Concurrency() != 3 {
		t.Fatalf("starts at concurrency %d, want min_concurrency 3", m.Concurrency())
	}
	now := t0
	for range 12 { // quiet windows with sends: one step up each
		m.RecordSent(now, 0)
		m.RecordDone(now)
		now = now.Add(sec)
		m.tick(now)
	}
	if m.Concurrency() <= 8 {
		t.Fatalf("concurrency %d after 12 quiet windows, want above the domain default of 8 (no ceiling)", m.Concurrency())
	}
	ceil := newSM(t, "api.example.com", "BACKOFF_WINDOW", 1.0, "THROTTLING_SCOPES", map[string]any{
		"api.example.com": map[string]any{"rampup": true, "concurrency": 4}})
	now = t0
	for range 12 {
		ceil.RecordSent(now, 0)
		ceil.RecordDone(now)
		now = now.Add(sec)
		ceil.tick(now)
	}
	if ceil.Concurrency() != 4 {
		t.Fatalf("explicit ceiling: concurrency %d, want 4", ceil.Concurrency())
	}
}

func TestMinConcurrencyValidation(t *testing.T) {
	tests := []struct {
		entry map[string]any
		err   string
	}{
		{map[string]any{"rampup": true, "min_concurrency": 3}, ""},
		{map[string]any{"concurrency": 2, "min_concurrency": 3}, "3 is above concurrency 2"},
		{map[string]any{"min_concurrency": 3}, "above the scope's default concurrency 1"},
		{map[string]any{"rate_control": map[string]any{"latnecy": false}}, `did you mean "latency"`},
		{map[string]any{"rate_control": "yes"}, "want true, false or a mapping"},
	}
	for _, tt := range tests {
		_, err := ReadConfig(testSettings(t, "THROTTLING_SCOPES", map[string]any{"api": tt.entry}))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%v: %v", tt.entry, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrInvalidConfig)):
			t.Errorf("%v: error %v, want one containing %q", tt.entry, err, tt.err)
		}
	}
	cfg, err := ReadConfig(testSettings(t, "THROTTLING_RATE_CONTROL", true, "THROTTLING_SCOPES", map[string]any{
		"a": map[string]any{"rate_control": false}, "b": map[string]any{"rate_control": map[string]any{"latency": false}}}))
	if err != nil {
		t.Fatal(err)
	}
	if a, b, c := cfg.Scope("a").RateControl, cfg.Scope("b").RateControl, cfg.Scope("c").RateControl; a.Enabled || !b.Enabled || b.Latency || !c.Enabled || !c.Latency {
		t.Fatalf("rate_control: a %+v b %+v default %+v", a, b, c)
	}
}

// The throttling_scopes meta is the request's whole set of scopes (Scrapy's
// throttling design, PR #6931): it replaces the manager's host scope rather
// than adding to it, so an "api" scope has its own budget; a request that
// wants the host's budget too names the host.
func TestMetaScopesReplaceTheManagersScopes(t *testing.T) {
	th, _ := newTestThrottler(t)
	for _, tt := range []struct {
		name string
		meta any // nil: no meta
		want string
	}{
		{"no meta: the manager's host scope", nil, "[{example.com 0}]"},
		{"string", "api", "[{api 0}]"},
		{"list", []any{"api", "users"}, "[{api 0} {users 0}]"},
		{"list naming the host", []string{"api", "example.com"}, "[{api 0} {example.com 0}]"},
		{"mapping with amounts", map[string]any{"cost": 2.5}, "[{cost 2.5}]"},
		{"mapping naming the host", map[string]any{"cost": 1, "example.com": 0}, "[{cost 1} {example.com 0}]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := spider.MustRequest("https://example.com/v1/items", nil)
			if tt.meta != nil {
				req.Set(MetaScopes, tt.meta)
			}
			sc, err := th.Scopes(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(sc); got != tt.want {
				t.Errorf("scopes %s, want %s", got, tt.want)
			}
		})
	}
	for _, bad := range []any{[]any{}, "", 42} {
		req := spider.MustRequest("https://example.com/", nil).Set(MetaScopes, bad)
		if _, err := th.Scopes(context.Background(), req); err == nil || !strings.Contains(err.Error(), MetaScopes) {
			t.Errorf("meta %#v: error %v, want one naming %s", bad, err, MetaScopes)
		}
	}
}

// An "api" scope named by the meta runs at its own pace on a host whose
// pages wait DOWNLOAD_DELAY between sends: on the fake clock, four api
// requests go at once (concurrency 4, no delay) while the host's pages
// are one second apart; naming the host too puts the request back under
// the host's delay.
func TestMetaScopeHasItsOwnBudget(t *testing.T) {
	th, _ := newTestThrottler(t, "DOWNLOAD_DELAY", 1.0, "RANDOMIZE_DOWNLOAD_DELAY", false,
		"THROTTLING_RATE_CONTROL", false,
		"THROTTLING_SCOPES", map[string]any{"api": map[string]any{"concurrency": 4, "delay": 0}})
	ctx := context.Background()
	scopesFor := func(meta any) Scopes {
		req := spider.MustRequest("https://example.com/x", nil)
		if meta != nil {
			req.Set(MetaScopes, meta)
		}
		sc, err := th.Scopes(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	page, api, both := scopesFor(nil), scopesFor("api"), scopesFor([]any{"api", "example.com"})
	th.Sent(t0, page)
	for _, tt := range []struct {
		name   string
		scopes Scopes
		want   time.Duration
	}{
		{"second page waits the host delay", page, sec},
		{"api request 1", api, 0},
		{"api request 2", api, 0},
		{"api request 3", api, 0},
		{"api request 4", api, 0},
		{"api request 5: concurrency 4 reached", api, UntilSlotFree},
		{"api + host waits for both", both, UntilSlotFree},
	} {
		w := th.Wait(t0, tt.scopes)
		if w != tt.want {
			t.Errorf("%s: wait %v, want %v", tt.name, w, tt.want)
		}
		if w == 0 {
			th.Sent(t0, tt.scopes)
		}
	}
	th.Done(ctx, spider.MustRequest("https://example.com/x", nil), api, t0, nil, nil)
	if w := th.Wait(t0, both); w != sec {
		t.Errorf("api + host after an api slot freed: wait %v, want the host's 1s", w)
	}
}

// With THROTTLING_RATE_CONTROL: false the throttler gives exactly the
// spec's numbers: no start ramp, a new scope sends up to its concurrency
// at once and then one request per delay. Requests are sent as soon as
// the throttler allows (fake clock) and answered at once unless held.
// The last row is the documented departure, with the rate controller on:
// its start ramp paces a new scope's first 300 ms from 20/s.
func TestRateControlOffGivesTheSpecsNumbers(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name  string
		kv    []any
		scope string // "" = the host's
		n     int
		hold  bool // keep every request in flight (never answered)
		want  []time.Duration
	}{
		{"defaults: no delay between the first sends", nil, "", 8, false, make([]time.Duration, 8)},
		{"defaults, held: concurrency 8 at once", nil, "", 8, true, make([]time.Duration, 8)},
		{"DOWNLOAD_DELAY 1", []any{"DOWNLOAD_DELAY", 1.0}, "", 4, false, []time.Duration{0, 1000 * ms, 2000 * ms, 3000 * ms}},
		{"DOWNLOAD_DELAY 0.25", []any{"DOWNLOAD_DELAY", 0.25}, "", 4, false, []time.Duration{0, 250 * ms, 500 * ms, 750 * ms}},
		{"CONCURRENT_REQUESTS_PER_DOMAIN 2, held", []any{"CONCURRENT_REQUESTS_PER_DOMAIN", 2}, "", 2, true, []time.Duration{0, 0}},
		{"api scope: concurrency 4, delay 0.5", []any{"THROTTLING_SCOPES", map[string]any{"api": map[string]any{"concurrency": 4, "delay": 0.5}}},
			"api", 3, false, []time.Duration{0, 500 * ms, 1000 * ms}},
		{"rate control on: the start ramp (a departure)", []any{"THROTTLING_RATE_CONTROL", true}, "", 3, false, []time.Duration{0, 50 * ms, 75 * ms}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			th, fc := newTestThrottler(t, append([]any{"THROTTLING_RATE_CONTROL", false}, tt.kv...)...)
			req := spider.MustRequest("https://example.com/", nil)
			if tt.scope != "" {
				req.Set(MetaScopes, tt.scope)
			}
			sc, err := th.Scopes(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			for len(got) < tt.n {
				w := th.Wait(fc.Now(), sc)
				if w == UntilSlotFree {
					t.Fatalf("after %v: waiting for a slot", got)
				}
				if w > 0 {
					fc.Advance(w)
					continue
				}
				th.Sent(fc.Now(), sc)
				got = append(got, fc.Now().Sub(t0))
				if !tt.hold {
					th.Done(context.Background(), req, sc, fc.Now(), &spider.Response{URL: req.URL, Status: 200, Request: req}, nil)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("sends at %v, want %v", got, tt.want)
			}
			if tt.hold {
				if w := th.Wait(fc.Now(), sc); w != UntilSlotFree {
					t.Errorf("one more while all are in flight: wait %v, want UntilSlotFree", w)
				}
			}
		})
	}
}

// Every problem of one THROTTLING_SCOPES entry is reported, nested
// mappings included, each as a *ConfigError naming its key.
func TestScopeEntryReportsEveryProblem(t *testing.T) {
	for _, tt := range []struct {
		name  string
		entry map[string]any
		keys  []string // the keys named, in order
	}{
		{"three top-level keys", map[string]any{"concurency": 3, "delay": -1, "jitter": 7}, []string{"concurency", "delay", "jitter"}},
		{"top-level and nested", map[string]any{"delay": "x", "backoff": map[string]any{"factor": 2, "max_delay": -1},
			"rampup": map[string]any{"delay_factor": 3, "speed": 1}, "rate_control": map[string]any{"latnecy": true, "enabled": "x"}},
			[]string{"backoff.factor", "backoff.max_delay", "delay", "rampup.delay_factor", "rampup.speed", "rate_control.enabled", "rate_control.latnecy"}},
		{"one problem", map[string]any{"window": 0, "delay": 2}, []string{"window"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadConfig(testSettings(t, "THROTTLING_SCOPES", map[string]any{"s": tt.entry}))
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v, want ErrInvalidConfig", err)
			}
			var keys []string
			for _, e := range settings.Errors(err) {
				var ce *ConfigError
				if !errors.As(e, &ce) || ce.Scope != "s" {
					t.Fatalf("problem %v is not a ConfigError of scope s", e)
				}
				keys = append(keys, ce.Key)
			}
			if fmt.Sprint(keys) != fmt.Sprint(tt.keys) {
				t.Errorf("keys %v, want %v\n%v", keys, tt.keys, err)
			}
		})
	}
}
