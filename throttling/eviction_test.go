package throttling

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// 200,000 distinct hosts' worth of scope churn with THROTTLING_SCOPE_LIMIT
// 1,000: the number of scope states never exceeds the limit plus the busy
// ones, and the heap stays flat.
func TestScopeLimitBoundsMemoryUnderChurn(t *testing.T) {
	const hosts, limit, busy = 200_000, 1_000, 50
	th, fc := newTestThrottler(t, "THROTTLING_SCOPE_LIMIT", limit, "THROTTLING_SCOPE_MAX_IDLE", 0.0, "DOWNLOAD_DELAY", 0.0)
	ctx := context.Background()
	// 50 scopes stay busy (a request in flight) or backing off the whole time.
	for i := range busy {
		sc := scopesOf(fmt.Sprintf("busy%d.example", i))
		th.Sent(t0, sc)
		if i%2 == 0 {
			th.DelayScope(sc[0].Name, time.Hour)
		}
	}
	req := spider.MustRequest("https://example.com/", nil)
	var heapAt10k uint64
	peak := 0
	for i := range hosts {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		fc.Set(now)
		sc := Scopes{{Name: "h" + strconv.Itoa(i) + ".example"}}
		th.Sent(now, sc)
		th.Done(ctx, req, sc, now, nil, nil)
		peak = max(peak, th.Len())
		if i == 10_000 {
			heapAt10k = heapInUse()
		}
	}
	if peak > limit+busy {
		t.Fatalf("peak %d scope states, want at most %d (limit + busy)", peak, limit+busy)
	}
	if ev := th.Evictions(); ev < hosts-limit {
		t.Fatalf("%d evictions, want at least %d", ev, hosts-limit)
	}
	for i := range busy {
		if _, ok := th.scopes[fmt.Sprintf("busy%d.example", i)]; !ok {
			t.Fatalf("busy scope busy%d.example was evicted", i)
		}
	}
	heapEnd := heapInUse()
	t.Logf("scope states: peak %d; heap in use after 10k hosts %d KiB, after 200k %d KiB", peak, heapAt10k>>10, heapEnd>>10)
	// Generous margin: the end heap may not be 4 MiB above the early one.
	if heapEnd > heapAt10k+4<<20 {
		t.Errorf("heap grew from %d to %d KiB over 190k more hosts", heapAt10k>>10, heapEnd>>10)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// A scope created while every other scope is busy is not evicted by its
// own creation: busy scopes are moved to the front of the LRU list during
// the eviction pass, which used to leave the new scope at the back, where
// it was evicted (idle, nothing sent yet) and then used detached from the
// throttler, its in-flight request forgotten.
func TestScopeLimitKeepsTheScopeBeingCreated(t *testing.T) {
	th, _ := newTestThrottler(t, "THROTTLING_SCOPE_LIMIT", 2, "CONCURRENT_REQUESTS_PER_DOMAIN", 1)
	for _, s := range []string{"a.example", "b.example", "c.example"} {
		th.Sent(t0, scopesOf(s)) // all busy
	}
	if _, ok := th.scopes["c.example"]; !ok {
		t.Fatal("c.example was evicted by its own creation")
	}
	if w := th.Wait(t0, scopesOf("c.example")); w != UntilSlotFree {
		t.Fatalf("c.example wait %v with its one slot taken, want UntilSlotFree", w)
	}
}

func TestScopeMaxIdleSweep(t *testing.T) {
	th, fc := newTestThrottler(t, "THROTTLING_SCOPE_MAX_IDLE", 60.0, "THROTTLING_SCOPE_LIMIT", 0)
	ctx := context.Background()
	use := func(host string) {
		req := spider.MustRequest("https://"+host+"/", nil)
		sc, _ := th.Scopes(ctx, req)
		th.Sent(fc.Now(), sc)
		th.Done(ctx, req, sc, fc.Now(), nil, nil)
	}
	use("old.example")
	th.Sent(fc.Now(), scopesOf("inflight.example")) // never completes
	th.DelayScope("held.example", time.Hour)
	fc.Advance(30 * sec)
	use("recent.example")
	fc.Advance(40 * sec) // old: 70 s idle, recent: 40 s
	use("trigger.example")
	for _, tt := range []struct {
		scope string
		kept  bool
	}{{"old.example", false}, {"recent.example", true}, {"inflight.example", true}, {"held.example", true}, {"trigger.example", true}} {
		if _, ok := th.scopes[tt.scope]; ok != tt.kept {
			t.Errorf("%s kept = %v, want %v", tt.scope, ok, tt.kept)
		}
	}
}

func TestIdleRules(t *testing.T) {
	tests := []struct {
		name string
		prep func(m *ThrottlingScopeManager)
		at   time.Duration
		idle bool
	}{
		{"fresh", func(m *ThrottlingScopeManager) {}, 0, true},
		{"in flight", func(m *ThrottlingScopeManager) { m.RecordSent(t0, 0) }, 0, false},
		{"done, delay pending", func(m *ThrottlingScopeManager) { m.RecordSent(t0, 0); m.RecordDone(t0) }, sec, false},
		{"done, delay over", func(m *ThrottlingScopeManager) { m.RecordSent(t0, 0); m.RecordDone(t0) }, 3 * sec, true},
		{"backing off", func(m *ThrottlingScopeManager) { m.RecordBackoff(t0, BackoffSignal{}) }, 5 * sec, false},
		{"recovered", func(m *ThrottlingScopeManager) { m.RecordBackoff(t0, BackoffSignal{}) }, 61 * sec, true},
	}
	for _, tt := range tests {
		m := newSM(t, "example.com", "DOWNLOAD_DELAY", 2.0)
		tt.prep(m)
		if got := m.IsIdle(t0.Add(tt.at), 0); got != tt.idle {
			t.Errorf("%s: idle %v, want %v", tt.name, got, tt.idle)
		}
	}
}

// OnEvict hears of every evicted scope, and only of those: the engine
// closes their hosts' idle connections.
func TestOnEvictNamesEvictedScopes(t *testing.T) {
	th, fc := newTestThrottler(t, "THROTTLING_SCOPE_LIMIT", 2, "THROTTLING_SCOPE_MAX_IDLE", 0.0, "DOWNLOAD_DELAY", 0.0)
	var evicted []string
	th.OnEvict(func(scope string) { evicted = append(evicted, scope) })
	ctx := context.Background()
	req := spider.MustRequest("https://example.com/", nil)
	busy := scopesOf("busy.example")
	th.Sent(t0, busy) // in flight: never evicted
	for i, h := range []string{"a.example", "b.example", "c.example"} {
		now := t0.Add(time.Duration(i+1) * time.Second)
		fc.Set(now)
		sc := scopesOf(h)
		th.Sent(now, sc)
		th.Done(ctx, req, sc, now, nil, nil)
	}
	if want := []string{"a.example", "b.example"}; fmt.Sprint(evicted) != fmt.Sprint(want) {
		t.Errorf("OnEvict heard %v, want %v", evicted, want)
	}
}
