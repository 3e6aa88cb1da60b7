package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type env struct {
	s     scheduler.Scheduler
	thr   *throttling.Throttler
	stats *stats.Collector
	clk   *clock.Fake
}

func newEnv(t *testing.T, set map[string]any) *env {
	t.Helper()
	s := settings.New()
	// The fake clock stands still unless a test moves it: no rate
	// controller (its start ramp paces a new scope's first requests).
	if err := s.Set("THROTTLING_RATE_CONTROL", false, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMap(set, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	thr, err := throttling.New(s, throttling.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	st := stats.New()
	sch, err := scheduler.New(scheduler.Deps{Settings: s, Throttler: thr, Stats: st, Log: zerolog.Nop(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sch.Close(context.Background()) })
	return &env{s: sch, thr: thr, stats: st, clk: clk}
}

func (e *env) enqueue(t *testing.T, u string, depth, prio int) bool {
	t.Helper()
	r := spider.MustRequest(u, nil)
	r.Depth, r.Priority = depth, prio
	ok, err := e.s.Enqueue(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// drain pops every job, completing each at once, and returns their paths.
func (e *env) drain(t *testing.T) []string {
	t.Helper()
	var out []string
	for {
		j, _, err := e.s.Next(context.Background(), e.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if j == nil {
			return out
		}
		out = append(out, j.Req.URL.Path)
		e.thr.Done(context.Background(), j.Req, j.Scopes, j.SentAt, nil, nil)
		if err := e.s.Done(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRegistryErrors(t *testing.T) {
	s := settings.New()
	s.Set("SCHEDULER", "Nope", settings.SourceCommandLine, "test")
	_, err := scheduler.New(scheduler.Deps{Settings: s, Log: zerolog.Nop()})
	if err == nil || !strings.Contains(err.Error(), "ThrottlingAwareScheduler") {
		t.Fatalf("unknown SCHEDULER: %v, want an error listing the registered ones", err)
	}
	s = settings.New()
	s.Set("SCHEDULER_PRIORITY_QUEUE", "Nope", settings.SourceCommandLine, "test")
	_, err = scheduler.New(scheduler.Deps{Settings: s, Log: zerolog.Nop()})
	if err == nil || !strings.Contains(err.Error(), "SCHEDULER_PRIORITY_QUEUE") || !strings.Contains(err.Error(), "PriorityQueue") {
		t.Fatalf("unknown SCHEDULER_PRIORITY_QUEUE: %v", err)
	}
}

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		scheduler string
		admitted  bool
	}{
		{scheduler.ThrottlingAware, true},
		{scheduler.EngineGated, false},
	} {
		e := newEnv(t, map[string]any{"SCHEDULER": tc.scheduler, "THROTTLING_SCOPES": map[string]any{"slow.test": map[string]any{"delay": 10.0, "jitter": 0}}})
		e.enqueue(t, "http://slow.test/1", 0, 0)
		e.enqueue(t, "http://slow.test/2", 0, 0)
		j, _, _ := e.s.Next(context.Background(), t0)
		if j == nil || j.Admitted != tc.admitted {
			t.Fatalf("%s: first job %+v, want Admitted=%v", tc.scheduler, j, tc.admitted)
		}
		if !tc.admitted {
			e.thr.Sent(t0, j.Scopes) // what the engine's Admit does
		}
		j2, wake, _ := e.s.Next(context.Background(), t0)
		if tc.admitted && (j2 != nil || wake != 10*time.Second) {
			t.Fatalf("%s: second job %v wake %v; want none for 10s (the scope's delay)", tc.scheduler, j2, wake)
		}
		if !tc.admitted && j2 == nil {
			t.Fatalf("%s: engine-gated scheduler held back a request; it should leave waiting to the engine", tc.scheduler)
		}
	}
}

func TestDepth(t *testing.T) {
	tests := []struct {
		name  string
		set   map[string]any
		order string
		kept  int
	}{
		{"limit", map[string]any{"DEPTH_LIMIT": 2}, "/d2 /d0 /d1", 3}, // FIFO: DEPTH_PRIORITY is 0
		{"breadth-first", map[string]any{"DEPTH_PRIORITY": 1}, "/d0 /d1 /d2 /d3", 4},
		{"depth-first", map[string]any{"DEPTH_PRIORITY": -1}, "/d3 /d2 /d1 /d0", 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.set)
			kept := 0
			for _, d := range []int{2, 0, 3, 1} {
				if e.enqueue(t, fmt.Sprintf("http://a.test/d%d", d), d, 0) {
					kept++
				}
			}
			// One host, concurrency 8: drain gives queue order.
			if got := strings.Join(e.drain(t), " "); kept != tc.kept || got != tc.order {
				t.Fatalf("kept %d, order %q; want %d, %q", kept, got, tc.kept, tc.order)
			}
			if want := float64(4 - tc.kept); e.stats.Get(scheduler.StatDepthLimited) != want {
				t.Fatalf("%s = %v, want %v", scheduler.StatDepthLimited, e.stats.Get(scheduler.StatDepthLimited), want)
			}
		})
	}
}

func TestDupefilter(t *testing.T) {
	e := newEnv(t, nil)
	if !e.enqueue(t, "http://a.test/x?b=1&a=2", 0, 0) {
		t.Fatal("first request dropped")
	}
	if e.enqueue(t, "http://A.test:80/x?a=2&b=1#f", 0, 0) {
		t.Fatal("duplicate queued")
	}
	r := spider.MustRequest("http://a.test/x?a=2&b=1", nil)
	r.DontFilter = true
	if ok, _ := e.s.Enqueue(context.Background(), r); !ok {
		t.Fatal("DontFilter request dropped")
	}
	if e.stats.Get(dupefilter.StatFiltered) != 1 || e.s.Len() != 2 {
		t.Fatalf("filtered %v, Len %d; want 1, 2", e.stats.Get(dupefilter.StatFiltered), e.s.Len())
	}
}

func TestStorageOverride(t *testing.T) {
	s := settings.New()
	thr, _ := throttling.New(s, throttling.Options{})
	store, seen := pqueue.NewMemoryStore(), dupefilter.NewMemorySet()
	sch, err := scheduler.New(scheduler.Deps{Settings: s, Throttler: thr, Log: zerolog.Nop(), Storage: &scheduler.Storage{Queue: store, Seen: seen}})
	if err != nil {
		t.Fatal(err)
	}
	sch.Open(context.Background())
	sch.Enqueue(context.Background(), spider.MustRequest("http://a.test/", nil))
	if store.Len() != 1 || seen.Len() != 1 {
		t.Fatalf("store Len %d, set Len %d; want the given storage used", store.Len(), seen.Len())
	}
}

func TestNotifier(t *testing.T) {
	e := newEnv(t, nil)
	if n, ok := e.s.(scheduler.Notifier); !ok || n.Changed() == nil {
		t.Fatal("the throttling-aware scheduler does not expose Changed")
	}
	g := newEnv(t, map[string]any{"SCHEDULER": scheduler.EngineGated})
	if n, ok := g.s.(scheduler.Notifier); ok && n.Changed() != nil {
		t.Fatal("the engine-gated scheduler returns a Changed channel, but nothing would signal it")
	}
}

// A request that is recorded by the dupefilter but then cannot be queued
// (here: invalid throttling_scopes meta) must not make a later valid request
// for the same URL look like a duplicate.
func TestRejectedRequestIsForgottenByTheDupefilter(t *testing.T) {
	e := newEnv(t, nil)
	bad := spider.MustRequest("http://a.test/page", nil)
	bad.Set(throttling.MetaScopes, 42)
	if ok, err := e.s.Enqueue(context.Background(), bad); err == nil || ok {
		t.Fatalf("Enqueue(invalid scopes) = %v, %v; want an error", ok, err)
	}
	if !e.enqueue(t, "http://a.test/page", 0, 0) {
		t.Fatal("a valid request for the URL of a rejected one was dropped as a duplicate")
	}
	if e.enqueue(t, "http://a.test/page", 0, 0) {
		t.Fatal("a true duplicate was queued")
	}
}
