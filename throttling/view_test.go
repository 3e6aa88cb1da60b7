package throttling

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/spider"
)

// viewState is the part of a ScopeView the table below checks.
type viewState struct {
	InMemory, FromConfig   bool
	Kind                   string
	Level                  int
	Delay, Pace, Wait      time.Duration
	Conc, InFlight         int
	SlotsFull              bool
	BlockedUntil, NextSend time.Time
	QuotaUsed              float64
	QuotaStart, QuotaEnd   time.Time
	RobotsDelay            time.Duration
	HasRobots              bool
}

func stateOf(v ScopeView) viewState {
	return viewState{
		InMemory: v.InMemory, FromConfig: v.FromConfig, Kind: v.Kind, Level: v.BackoffLevel,
		Delay: durationOf(v.Delay), Pace: durationOf(v.Pace), Wait: durationOf(v.Wait),
		Conc: v.Concurrency, InFlight: v.InFlight, SlotsFull: v.SlotsFull,
		BlockedUntil: v.BlockedUntil, NextSend: v.NextSend,
		QuotaUsed: v.QuotaUsed, QuotaStart: v.QuotaWindowStart, QuotaEnd: v.QuotaWindowEnd,
		RobotsDelay: durationOf(v.RobotsDelay), HasRobots: v.HasRobots,
	}
}

// outcome reports a response with status and header k: v (k may be "")
// for a request of scope sent at sentAt, at the fake clock's now.
func outcome(th *Throttler, scope string, sentAt time.Time, status int, k, v string) {
	req := spider.MustRequest("https://"+scope+"/", nil)
	res := &spider.Response{URL: req.URL, Status: status, Header: http.Header{}, Request: req}
	if k != "" {
		res.Header.Set(k, v)
	}
	th.Done(context.Background(), req, scopesOf(scope), sentAt, res, nil)
}

func TestView(t *testing.T) {
	const ms = time.Millisecond
	hostConf := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"example.com": m}
	}
	tests := []struct {
		name    string
		kv      []any
		scope   string
		run     func(th *Throttler, fc *clock.Fake) // events, on the fake clock
		want    viewState
		wantLen int // scopes in memory after the view
	}{{
		name: "right after a 429: level 1, the backoff delay and its pause",
		kv:   []any{"BACKOFF_MIN_DELAY", 1.0, "BACKOFF_WINDOW", 60.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com"))
			fc.Advance(100 * ms)
			outcome(th, "example.com", t0, 429, "", "")
		},
		want: viewState{InMemory: true, Kind: "domain", Level: 1, Delay: sec, Wait: sec, Conc: 8,
			NextSend: t0.Add(1100 * ms)}, // the step's pause counts from the trigger
		wantLen: 1,
	}, {
		name: "a quiet BACKOFF_WINDOW later, without any send: recovered",
		kv:   []any{"BACKOFF_MIN_DELAY", 1.0, "BACKOFF_WINDOW", 60.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com"))
			fc.Advance(100 * ms)
			outcome(th, "example.com", t0, 429, "", "")
			fc.Advance(60 * sec)
		},
		want:    viewState{InMemory: true, Kind: "domain", Conc: 8},
		wantLen: 1,
	}, {
		name: "two steps, one quiet window: one step recovered",
		kv:   []any{"BACKOFF_MIN_DELAY", 1.0, "BACKOFF_WINDOW", 60.0},
		run: func(th *Throttler, fc *clock.Fake) {
			sc := scopesOf("example.com")
			th.Sent(t0, sc)
			outcome(th, "example.com", t0, 429, "", "")
			fc.Advance(2 * sec)
			th.Sent(fc.Now(), sc)
			outcome(th, "example.com", fc.Now(), 429, "", "")
			fc.Advance(61 * sec)
		},
		want:    viewState{InMemory: true, Kind: "domain", Level: 1, Delay: sec, Conc: 8},
		wantLen: 1,
	}, {
		name: "Retry-After: blocked until the announced time",
		kv:   []any{"BACKOFF_RETRY_AFTER_PACING", false},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com"))
			fc.Advance(100 * ms)
			outcome(th, "example.com", t0, 429, "Retry-After", "30")
		},
		want: viewState{InMemory: true, Kind: "domain", Wait: 30 * sec, Conc: 8,
			BlockedUntil: t0.Add(30*sec + 100*ms)},
		wantLen: 1,
	}, {
		name: "Retry-After with pacing: blocked, then paced at the rate it had",
		kv:   []any{"BACKOFF_WINDOW", 10.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com")) // one send in the last second: a 1 s pace
			outcome(th, "example.com", t0, 503, "Retry-After", "2")
		},
		want: viewState{InMemory: true, Kind: "domain", Delay: sec, Pace: sec, Wait: 2 * sec, Conc: 8,
			BlockedUntil: t0.Add(2 * sec), NextSend: t0.Add(sec)},
		wantLen: 1,
	}, {
		name: "the pace halves after a quiet window, without any send",
		kv:   []any{"BACKOFF_WINDOW", 10.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com"))
			outcome(th, "example.com", t0, 503, "Retry-After", "2")
			fc.Advance(10 * sec)
		},
		want:    viewState{InMemory: true, Kind: "domain", Delay: 500 * ms, Pace: 500 * ms, Conc: 8},
		wantLen: 1,
	}, {
		name: "DelayScope: blocked beyond BACKOFF_MAX_DELAY",
		kv:   []any{"BACKOFF_MAX_DELAY", 10.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.DelayScope("example.com", 600*sec)
			fc.Advance(100 * sec)
		},
		want:    viewState{InMemory: true, Kind: "domain", Wait: 500 * sec, Conc: 8, BlockedUntil: t0.Add(600 * sec)},
		wantLen: 1,
	}, {
		name: "delay: the next send the delay allows",
		kv:   []any{"DOWNLOAD_DELAY", 2.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com"))
			fc.Advance(500 * ms)
		},
		want: viewState{InMemory: true, Kind: "domain", Delay: 2 * sec, Wait: 1500 * ms, Conc: 8, InFlight: 1,
			NextSend: t0.Add(2 * sec)},
		wantLen: 1,
	}, {
		name: "every slot taken",
		kv:   []any{"THROTTLING_SCOPES", hostConf("concurrency", 2)},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com"))
			th.Sent(t0, scopesOf("example.com"))
		},
		want:    viewState{InMemory: true, Kind: "domain", Conc: 2, InFlight: 2, SlotsFull: true},
		wantLen: 1,
	}, {
		name: "rampup: a window with sends and no trigger halves the delay",
		kv:   []any{"BACKOFF_WINDOW", 10.0, "THROTTLING_SCOPES", hostConf("delay", 1.0, "concurrency", 4, "rampup", true)},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com"))
			outcome(th, "example.com", t0, 200, "", "")
			fc.Advance(10 * sec)
		},
		want:    viewState{InMemory: true, Kind: "domain", Delay: 500 * ms, Conc: 1},
		wantLen: 1,
	}, {
		name: "rampup: at its delay floor, a quiet window adds a slot",
		kv: []any{"BACKOFF_WINDOW", 10.0, "THROTTLING_SCOPES", hostConf("delay", 0.0, "concurrency", 4,
			"rampup", true)},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("example.com"))
			outcome(th, "example.com", t0, 200, "", "")
			fc.Advance(10 * sec)
		},
		want:    viewState{InMemory: true, Kind: "domain", Conc: 2},
		wantLen: 1,
	}, {
		name:  "quota: used in the current window",
		kv:    []any{"THROTTLING_SCOPES", map[string]any{"api": map[string]any{"quota": 10, "window": 60, "concurrency": 4}}},
		scope: "api",
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, Scopes{{Name: "api", Amount: 4}})
			fc.Advance(sec)
			th.Sent(fc.Now(), Scopes{{Name: "api", Amount: 4}})
		},
		want: viewState{InMemory: true, Kind: "custom", Conc: 4, InFlight: 2, QuotaUsed: 8,
			QuotaStart: t0, QuotaEnd: t0.Add(60 * sec)},
		wantLen: 1,
	}, {
		name:  "quota: the window ended, without any send",
		kv:    []any{"THROTTLING_SCOPES", map[string]any{"api": map[string]any{"quota": 10, "window": 60, "concurrency": 4}}},
		scope: "api",
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, Scopes{{Name: "api", Amount: 4}})
			fc.Advance(60 * sec)
		},
		want:    viewState{InMemory: true, Kind: "custom", Conc: 4, InFlight: 1},
		wantLen: 1,
	}, {
		name:    "not in memory: described from THROTTLING_SCOPES, not created",
		kv:      []any{"THROTTLING_SCOPES", hostConf("delay", 2.0, "concurrency", 3)},
		want:    viewState{FromConfig: true, Kind: "domain", Delay: 2 * sec, Conc: 3},
		wantLen: 0,
	}, {
		name:    "not in memory: an IP scope from the defaults",
		kv:      []any{"CONCURRENT_REQUESTS_PER_IP", 2, "DOWNLOAD_DELAY", 0.5},
		scope:   "10.0.0.1",
		want:    viewState{FromConfig: true, Kind: "ip", Delay: 500 * ms, Conc: 2},
		wantLen: 0,
	}, {
		name: "not in memory: robots.txt Crawl-delay applied",
		kv:   []any{"ROBOTSTXT_OBEY", true},
		run: func(th *Throttler, fc *clock.Fake) {
			th.SetRobotsDelay("example.com", 5*sec)
		},
		want:    viewState{FromConfig: true, Kind: "domain", Delay: 5 * sec, Conc: 1, RobotsDelay: 5 * sec, HasRobots: true},
		wantLen: 0,
	}, {
		name: "not in memory: rampup starts at min_concurrency",
		kv:   []any{"THROTTLING_SCOPES", hostConf("delay", 1.0, "concurrency", 8, "min_concurrency", 2, "rampup", true)},
		want: viewState{FromConfig: true, Kind: "domain", Delay: sec, Conc: 2},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, fc := newTestThrottler(t, tt.kv...)
			scope := tt.scope
			if scope == "" {
				scope = "example.com"
			}
			if tt.run != nil {
				tt.run(th, fc)
			}
			v := th.View(scope)
			if got := stateOf(v); got != tt.want {
				t.Errorf("view\n got %+v\nwant %+v", got, tt.want)
			}
			if v.Scope != scope || !v.At.Equal(fc.Now()) {
				t.Errorf("view of %q at %v, want %q at %v", v.Scope, v.At, scope, fc.Now())
			}
			if n := th.Len(); n != tt.wantLen {
				t.Errorf("%d scopes in memory after the view, want %d", n, tt.wantLen)
			}
		})
	}
}

// Viewing advances the real state: after the view showed a recovery, the
// scope lets a request go at once.
func TestViewAdvancesTheScope(t *testing.T) {
	th, fc := newTestThrottler(t, "BACKOFF_MIN_DELAY", 1.0, "BACKOFF_WINDOW", 60.0)
	sc := scopesOf("example.com")
	th.Sent(t0, sc)
	outcome(th, "example.com", t0, 429, "", "")
	fc.Advance(60 * sec)
	if v := th.View("example.com"); v.BackoffLevel != 0 {
		t.Fatalf("level %d after a quiet window, want 0", v.BackoffLevel)
	}
	m := th.scopes["example.com"].mgr.(*ThrottlingScopeManager)
	if m.Level() != 0 {
		t.Fatalf("manager level %d after the view, want 0", m.Level())
	}
	if w := th.Wait(fc.Now(), sc); w != 0 {
		t.Fatalf("wait %v after the recovery, want 0", w)
	}
}

// A scope not in memory is described as creating it would make it: the
// view before its first use matches the view right after it is created.
func TestViewOfFreshScopeMatchesCreation(t *testing.T) {
	for _, kv := range [][]any{
		{},
		{"DOWNLOAD_DELAY", 3.0, "CONCURRENT_REQUESTS_PER_DOMAIN", 0},
		{"THROTTLING_SCOPES", map[string]any{"example.com": map[string]any{"rampup": map[string]any{"min_delay": 0.5}, "delay": 0.25}}},
		{"ROBOTSTXT_OBEY", true, "THROTTLING_SCOPES", map[string]any{"example.com": map[string]any{"delay": 0.1}}},
		{"ROBOTSTXT_OBEY", true, "THROTTLING_SCOPES", map[string]any{"example.com": map[string]any{"rampup": true, "delay": 0.1}}},
	} {
		t.Run(fmt.Sprint(kv), func(t *testing.T) {
			th, _ := newTestThrottler(t, kv...)
			th.SetRobotsDelay("example.com", 2*sec)
			before := th.View("example.com")
			th.ScopeWait(t0, "example.com", 0) // creates the scope
			after := th.View("example.com")
			if before.InMemory || !after.InMemory || !before.FromConfig || after.FromConfig {
				t.Fatalf("in memory %v -> %v, from config %v -> %v", before.InMemory, after.InMemory, before.FromConfig, after.FromConfig)
			}
			before.InMemory, before.FromConfig = true, false
			if before != after {
				t.Fatalf("before creation\n %+v\nafter\n %+v", before, after)
			}
		})
	}
}

func TestViewsListsScopesInMemorySorted(t *testing.T) {
	th, _ := newTestThrottler(t, "THROTTLING_SCOPES", map[string]any{"configured.example": map[string]any{"delay": 1.0}})
	for _, s := range []string{"b.example", "a.example", "c.example"} {
		th.Sent(t0, scopesOf(s))
	}
	var names []string
	for _, v := range th.Views() {
		if !v.InMemory || v.FromConfig {
			t.Errorf("%s: in memory %v, from config %v", v.Scope, v.InMemory, v.FromConfig)
		}
		names = append(names, v.Scope)
	}
	if got := strings.Join(names, " "); got != "a.example b.example c.example" {
		t.Fatalf("views of %s, want the three scopes in memory, sorted", got)
	}
	if v := th.View("configured.example"); v.InMemory || !v.Configured || v.Delay != 1 {
		t.Fatalf("configured scope not in memory: %+v", v)
	}
}

// opaqueScopeManager hides the default manager's optional methods, like a
// custom manager that implements only ScopeManager.
type opaqueScopeManager struct{ ScopeManager }

func init() {
	RegisterScopeManager("testOpaqueScopeManager", func(env ScopeEnv) (ScopeManager, error) {
		return opaqueScopeManager{NewThrottlingScopeManager(env)}, nil
	})
}

func TestViewOfCustomManagerWithoutViewer(t *testing.T) {
	th, fc := newTestThrottler(t, "THROTTLING_SCOPES", map[string]any{
		"example.com": map[string]any{"manager": "testOpaqueScopeManager", "concurrency": 1, "delay": 2.0},
	})
	th.Sent(t0, scopesOf("example.com"))
	fc.Advance(sec)
	v := th.View("example.com")
	want := viewState{InMemory: true, FromConfig: true, Kind: "domain", Delay: 2 * sec, Conc: 1, SlotsFull: true}
	if got := stateOf(v); got != want {
		t.Fatalf("view\n got %+v\nwant %+v", got, want)
	}
	if !v.LastUsed.Equal(t0) || v.Manager != "testOpaqueScopeManager" {
		t.Fatalf("last used %v (want t0, when the throttler last consulted it), manager %q", v.LastUsed, v.Manager)
	}
}

func TestViewJSON(t *testing.T) {
	th, fc := newTestThrottler(t)
	th.Sent(t0, scopesOf("example.com"))
	outcome(th, "example.com", t0, 429, "", "") // a 1 s step
	fc.Advance(500 * time.Millisecond)
	b, err := json.Marshal(th.View("example.com"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["delay"] != 1.0 || m["wait"] != 0.5 || m["kind"] != "domain" || m["in_memory"] != true {
		t.Errorf("JSON %s: want delay 1, wait 0.5 (seconds), kind domain, in_memory", b)
	}
	for _, k := range []string{"blocked_until", "quota_window_start", "pace"} {
		if _, ok := m[k]; ok {
			t.Errorf("JSON %s: %s present, want it left out when zero", b, k)
		}
	}
	if _, ok := m["next_send"]; !ok {
		t.Errorf("JSON %s: next_send missing", b)
	}
}

func TestSweep(t *testing.T) {
	tests := []struct {
		name      string
		kv        []any
		run       func(th *Throttler, fc *clock.Fake)
		wantSwept int
		wantHeld  []string
	}{{
		name: "idle for THROTTLING_SCOPE_MAX_IDLE: evicted",
		kv:   []any{"THROTTLING_SCOPE_MAX_IDLE", 100.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("old.example"))
			outcome(th, "old.example", t0, 200, "", "")
			fc.Advance(50 * sec)
			th.Sent(fc.Now(), scopesOf("recent.example"))
			outcome(th, "recent.example", fc.Now(), 200, "", "")
			fc.Advance(50 * sec)
		},
		wantSwept: 1, wantHeld: []string{"recent.example"},
	}, {
		name: "not idle for long enough: kept",
		kv:   []any{"THROTTLING_SCOPE_MAX_IDLE", 100.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("old.example"))
			outcome(th, "old.example", t0, 200, "", "")
			fc.Advance(99 * sec)
		},
		wantHeld: []string{"old.example"},
	}, {
		name: "viewing is not using: evicted all the same",
		kv:   []any{"THROTTLING_SCOPE_MAX_IDLE", 100.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("old.example"))
			outcome(th, "old.example", t0, 200, "", "")
			fc.Advance(99 * sec)
			th.View("old.example")
			th.Views()
			fc.Advance(sec)
		},
		wantSwept: 1,
	}, {
		name: "a request in flight: kept",
		kv:   []any{"THROTTLING_SCOPE_MAX_IDLE", 100.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("busy.example"))
			fc.Advance(200 * sec)
		},
		wantHeld: []string{"busy.example"},
	}, {
		name: "backing off: kept",
		kv:   []any{"THROTTLING_SCOPE_MAX_IDLE", 100.0, "BACKOFF_WINDOW", 1000.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("slow.example"))
			outcome(th, "slow.example", t0, 429, "", "")
			fc.Advance(200 * sec)
		},
		wantHeld: []string{"slow.example"},
	}, {
		name: "THROTTLING_SCOPE_MAX_IDLE 0: never",
		kv:   []any{"THROTTLING_SCOPE_MAX_IDLE", 0.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("old.example"))
			outcome(th, "old.example", t0, 200, "", "")
			fc.Advance(1000 * time.Hour)
		},
		wantHeld: []string{"old.example"},
	}, {
		name: "over THROTTLING_SCOPE_LIMIT once a busy scope is idle",
		kv:   []any{"THROTTLING_SCOPE_LIMIT", 1, "THROTTLING_SCOPE_MAX_IDLE", 0.0},
		run: func(th *Throttler, fc *clock.Fake) {
			th.Sent(t0, scopesOf("a.example"))
			th.Sent(t0, scopesOf("b.example")) // a.example is busy: both kept
			req := spider.MustRequest("https://a.example/", nil)
			th.Done(context.Background(), req, scopesOf("a.example"), t0, nil, nil)
		},
		wantSwept: 1, wantHeld: []string{"b.example"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, fc := newTestThrottler(t, tt.kv...)
			tt.run(th, fc)
			if n := th.Sweep(); n != tt.wantSwept {
				t.Errorf("Sweep evicted %d scopes, want %d", n, tt.wantSwept)
			}
			var held []string
			for _, v := range th.Views() {
				held = append(held, v.Scope)
			}
			if fmt.Sprint(held) != fmt.Sprint(tt.wantHeld) {
				t.Errorf("scopes in memory %v, want %v", held, tt.wantHeld)
			}
		})
	}
}
