package throttling

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

func TestSnapshotRestoreKeepsBackoff(t *testing.T) {
	kv := []any{"THROTTLING_SCOPES", map[string]any{"cost": map[string]any{"quota": 10.0}}}
	th, fc := newTestThrottler(t, kv...)
	ctx := context.Background()
	req := spider.MustRequest("https://example.com/", nil).Set(MetaScopes, map[string]any{"cost": 4.0, "example.com": 0})
	sc, _ := th.Scopes(ctx, req)
	for range 3 { // three 429s: delay 4 s
		th.Sent(fc.Now(), sc)
		fc.Advance(sec)
		th.Done(ctx, req, sc, fc.Now().Add(-sec/2), &spider.Response{URL: req.URL, Status: 429, Header: http.Header{}, Request: req}, nil)
	}
	th.DelayScope("held.example", 3600*sec)
	th.SetRobotsDelay("polite.example", 2*sec)

	snaps, raw := snapshotJSON(t, th)
	th2, _ := newTestThrottler(t, kv...)
	th2.clock = fc
	th2.Restore(snaps)

	now := fc.Now()
	m := th2.scopes["example.com"].mgr.(*ThrottlingScopeManager)
	if m.Level() != 3 || m.Delay() != 4*sec {
		t.Errorf("restored example.com: level %d delay %v, want 3 and 4s", m.Level(), m.Delay())
	}
	if w := th2.Wait(now, scopesOf("held.example")); w < 3590*sec {
		t.Errorf("restored held.example wait %v, want ~1h", w)
	}
	if c := th2.scopes["cost"].mgr.(*ThrottlingScopeManager); c.Used() != 12 {
		t.Errorf("restored quota used %v, want 12", c.Used())
	}
	if d, ok := th2.RobotsDelay("polite.example"); !ok || d != 2*sec {
		t.Errorf("restored robots delay %v %v", d, ok)
	}
	if p := th2.scopes["polite.example"].mgr.(*ThrottlingScopeManager); p.Concurrency() != 1 || p.Delay() != 2*sec {
		t.Errorf("restored polite.example: concurrency %d delay %v", p.Concurrency(), p.Delay())
	}
	if len(snaps) != 4 {
		t.Fatalf("snapshot of %d scopes, want 4 (example.com, cost, held, polite): %s", len(snaps), raw)
	}
	// Scopes in their configured state are left out.
	th.Wait(fc.Now(), scopesOf("fresh.example"))
	if n := len(th.Snapshot()); n != 4 {
		t.Fatalf("snapshot grew to %d scopes with a pristine one", n)
	}
}

// A resumed job keeps a RateLimit send budget: it is counted against the
// gate's counters, which the snapshot saves (before, they restarted at 0
// and a budget of 2 more sends became one of 22), and "remaining 0" still
// holds until the reset (it was dropped as an old-format state).
func TestSnapshotRestoreKeepsSendBudget(t *testing.T) {
	for _, left := range []int{2, 0} {
		t.Run(fmt.Sprintf("remaining=%d", left), func(t *testing.T) {
			m := rcManager(t, "example.com")
			at := t0
			for range 20 {
				m.RecordSent(at, 0)
				at = at.Add(10 * time.Millisecond)
				m.RecordOutcome(at, Outcome{Class: OutcomeOK, Signal: Signal{SentAt: at}})
			}
			m.RecordSent(at, 0)
			rl := &RateLimit{Remaining: float64(left), HasRemaining: true, Reset: 10 * time.Second}
			m.RecordOutcome(at, Outcome{Class: OutcomeOK, Signal: Signal{SentAt: at, RateLimit: rl}})
			raw, err := json.Marshal(m.Snapshot(at))
			if err != nil {
				t.Fatal(err)
			}
			var s ScopeSnapshot
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			r := rcManager(t, "example.com")
			at = at.Add(time.Second) // the pause, well inside the reset
			r.Restore(at, s)
			sent := 0
			for ; sent < 30; sent++ {
				if w := r.CanSend(at, 0); w > 0 {
					if w > 5*time.Second {
						break // held until the reset
					}
					at = at.Add(w)
					continue
				}
				r.RecordSent(at, 0)
				r.RecordOutcome(at, Outcome{Class: OutcomeOK, Signal: Signal{SentAt: at}})
			}
			if sent != left {
				t.Fatalf("resumed scope sent %d requests before the reset, want the %d remaining (snapshot %s)", sent, left, raw)
			}
		})
	}
}

// A scope with no backoff, quota or robots.txt state is left out of the
// snapshot as pristine, but not while the delay after its last send still
// runs or its policy holds a RateLimit send budget: through the
// throttler's own Snapshot and Restore (what a JOBDIR stores), a resumed
// crawl waits out the delay and sends no more than the remaining budget
// before the reset.
func TestThrottlerSnapshotKeepsRunningState(t *testing.T) {
	ctx := context.Background()
	req := spider.MustRequest("http://h.test/", nil)
	ok := &spider.Response{URL: req.URL, Status: 200, Header: http.Header{}, Request: req}
	sc := Scopes{{Name: "h.test"}}
	roundTrip := func(t *testing.T, th *Throttler, kv []any, pause time.Duration) (*Throttler, time.Time) {
		t.Helper()
		snaps, _ := snapshotJSON(t, th)
		th2, fc2 := newTestThrottler(t, kv...)
		fc2.Advance(th.clock.Now().Sub(t0) + pause)
		th2.Restore(snaps)
		return th2, fc2.Now()
	}
	t.Run("delay", func(t *testing.T) {
		kv := []any{"DOWNLOAD_DELAY", 10.0}
		th, fc := newTestThrottler(t, kv...)
		th.Sent(fc.Now(), sc)
		fc.Advance(sec)
		th.Done(ctx, req, sc, t0, ok, nil)
		th2, now := roundTrip(t, th, kv, sec)
		if w := th2.Wait(now, sc); w != 8*sec {
			t.Fatalf("resumed 2 s after a send with a 10 s delay: wait %v, want 8s", w)
		}
	})
	t.Run("send budget", func(t *testing.T) {
		kv := []any{"THROTTLING_RATE_CONTROL", true}
		th, fc := newTestThrottler(t, kv...)
		th.mu.Lock()
		m := th.scope("h.test", fc.Now()).mgr.(*ThrottlingScopeManager)
		at := fc.Now()
		for range 20 {
			m.RecordSent(at, 0)
			at = at.Add(10 * time.Millisecond)
			m.RecordOutcome(at, Outcome{Class: OutcomeOK, Signal: Signal{SentAt: at}})
		}
		m.RecordSent(at, 0)
		rl := &RateLimit{Remaining: 2, HasRemaining: true, Reset: 10 * time.Second}
		m.RecordOutcome(at, Outcome{Class: OutcomeOK, Signal: Signal{SentAt: at, RateLimit: rl}})
		th.mu.Unlock()
		fc.Advance(at.Sub(fc.Now()))
		th2, now := roundTrip(t, th, kv, sec)
		sent := 0
		for ; sent < 30; sent++ {
			w := th2.Wait(now, sc)
			if w > 5*sec {
				break // held until the reset
			}
			now = now.Add(w)
			th2.Sent(now, sc)
			th2.Done(ctx, req, sc, now, ok, nil)
		}
		if sent != 2 {
			t.Fatalf("resumed scope sent %d requests before the reset, want the 2 remaining", sent)
		}
	})
}

// snapshotJSON is th's snapshot as a JOBDIR saves it, through JSON, and
// the JSON.
func snapshotJSON(t *testing.T, th *Throttler) ([]ScopeSnapshot, []byte) {
	t.Helper()
	raw, err := json.Marshal(th.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var snaps []ScopeSnapshot
	if err := json.Unmarshal(raw, &snaps); err != nil {
		t.Fatal(err)
	}
	return snaps, raw
}
