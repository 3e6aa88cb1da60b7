package throttling

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestGateCanSend(t *testing.T) {
	tests := []struct {
		name   string
		gate   Gate
		amount float64
		want   time.Duration
	}{
		{"fresh gate", Gate{}, 0, 0},
		{"delay times jitter factor after the last send",
			Gate{Params: GateParams{Delay: sec}, State: GateState{LastSent: t0, JitterF: 1.5}}, 0, 1500 * time.Millisecond},
		{"hard minimum wins over a shorter delay",
			Gate{Params: GateParams{Delay: sec, BlockedUntil: t0.Add(3 * sec)}, State: GateState{LastSent: t0, JitterF: 1}}, 0, 3 * sec},
		{"slots full", Gate{Params: GateParams{Concurrency: 2}, State: GateState{Active: 2}}, 0, UntilSlotFree},
		{"slots full wins over a delay",
			Gate{Params: GateParams{Concurrency: 1, Delay: sec}, State: GateState{Active: 1, LastSent: t0, JitterF: 1}}, 0, UntilSlotFree},
		{"unlimited concurrency", Gate{State: GateState{Active: 100}}, 0, 0},
		{"quota fits", Gate{Params: GateParams{Quota: 10, Window: 60 * sec}, State: GateState{QuotaUsed: 6, WindowStart: t0}}, 4, 0},
		{"quota overflows: wait for the window's end",
			Gate{Params: GateParams{Quota: 10, Window: 60 * sec}, State: GateState{QuotaUsed: 6, WindowStart: t0.Add(-10 * sec)}}, 5, 50 * sec},
		{"quota window over: counts as empty",
			Gate{Params: GateParams{Quota: 10, Window: 60 * sec}, State: GateState{QuotaUsed: 10, WindowStart: t0.Add(-60 * sec)}}, 5, 0},
		{"larger than the quota goes alone in an empty window",
			Gate{Params: GateParams{Quota: 10, Window: 60 * sec}, State: GateState{WindowStart: t0}}, 50, 0},
		{"send budget left",
			Gate{Params: GateParams{SendLimit: 5, SendLimitUntil: t0.Add(2 * sec)}, State: GateState{Sends: 4}}, 0, 0},
		{"send budget used up: wait for its end, slots free",
			Gate{Params: GateParams{Concurrency: 8, SendLimit: 5, SendLimitUntil: t0.Add(2 * sec)}, State: GateState{Sends: 5}}, 0, 2 * sec},
		{"send budget: requests that never reached the server give theirs back",
			Gate{Params: GateParams{SendLimit: 5, SendLimitUntil: t0.Add(2 * sec)}, State: GateState{Sends: 7, Other: 3}}, 0, 0},
		{"send budget over",
			Gate{Params: GateParams{SendLimit: 5, SendLimitUntil: t0}, State: GateState{Sends: 9}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.gate.CanSend(t0, tt.amount); got != tt.want {
				t.Fatalf("CanSend = %v, want %v", got, tt.want)
			}
		})
	}
	g := Gate{Params: GateParams{Concurrency: 1, Delay: sec}, State: GateState{Active: 1, LastSent: t0, JitterF: 1}}
	if got := g.CanSendWithoutSlot(t0, 0); got != sec {
		t.Fatalf("CanSendWithoutSlot = %v, want the delay (1s) whatever the slots", got)
	}
}

func TestGateRecordsAndCounts(t *testing.T) {
	g := Gate{Params: GateParams{Delay: 100 * time.Millisecond, JitterLo: -0.5, JitterHi: 0.5, Concurrency: 2, Quota: 10, Window: 60 * sec}}
	g.RecordSent(t0, 3, 0.25) // jitter factor 1 - 0.5 + 0.25*1 = 0.75
	if g.State.JitterF != 0.75 || g.State.Active != 1 || g.State.Sends != 1 || g.State.QuotaUsed != 3 || !g.State.WindowStart.Equal(t0) {
		t.Fatalf("after one send: %+v", g.State)
	}
	if got := g.CanSend(t0, 0); got != 75*time.Millisecond {
		t.Fatalf("next send waits %v, want 75ms (100ms * 0.75)", got)
	}
	g.RecordSent(t0.Add(sec), 3, 0.5)                                // 2 in flight from t0+1s
	g.RecordDone(t0.Add(2*sec), OutcomeOK, 200*time.Millisecond)     // 2 in flight for 1 s
	g.RecordDone(t0.Add(3*sec), OutcomeRefused, 10*time.Millisecond) // 1 in flight for 1 s
	g.RecordDone(t0.Add(3*sec), OutcomeOther, 0)                     // already 0: stays 0
	s := g.State
	if s.Active != 0 || s.OK != 1 || s.Refused != 1 || s.Other != 1 || s.LatencySum != 200*time.Millisecond || s.LatencyN != 1 {
		t.Fatalf("counters %+v", s)
	}
	// In flight: 1 for [0,1], 2 for [1,2], 1 for [2,3]: 4 request-seconds;
	// both slots taken during [1,2].
	if math.Abs(s.InFlightSeconds-4) > 1e-9 || math.Abs(s.FullSeconds-1) > 1e-9 {
		t.Fatalf("in flight %v request-s (want 4), full %v s (want 1)", s.InFlightSeconds, s.FullSeconds)
	}
	if got := s.InFlightSecondsAt(t0.Add(10 * sec)); got != s.InFlightSeconds {
		t.Fatalf("nothing in flight since, yet the integral grew to %v", got)
	}
	g.Reconcile(t0.Add(3*sec), nil, ptr(1.0))
	if g.State.QuotaUsed != 9 {
		t.Fatalf("quota used %v after the server said 1 is left, want 9", g.State.QuotaUsed)
	}
	g.RecordSent(t0.Add(61*sec), 2, 0) // a new window
	if g.State.QuotaUsed != 2 || !g.State.WindowStart.Equal(t0.Add(61*sec)) {
		t.Fatalf("new window: used %v from %v", g.State.QuotaUsed, g.State.WindowStart)
	}
}

func TestGateSendRate(t *testing.T) {
	var g Gate
	for i := range 8 {
		g.RecordSent(t0.Add(time.Duration(i)*100*time.Millisecond), 0, 0)
	}
	tests := []struct {
		at   time.Duration
		want float64
	}{
		{800 * time.Millisecond, 8 / 1.8},
		{1500 * time.Millisecond, 8 / 1.5}, // the bucket rolled: 8 in the previous one
		{2500 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		if got := g.State.SendRate(t0.Add(tt.at)); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("SendRate at +%v = %v, want %v", tt.at, got, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// distributed emulates the distributed mode of the contract: the policy
// exists only as its serialized state between calls, the gate admits on
// its own and asks for a refresh only when its ValidUntil has passed or its
// OK counter reached ValidUntilOK, and feedback that changes the policy
// (sharedSignal) goes through a fresh policy (read, apply, write).
type distributed struct {
	t     *testing.T
	env   ScopeEnv
	state []byte
	gate  Gate
}

func newDistributed(t *testing.T, env ScopeEnv, now time.Time) *distributed {
	d := &distributed{t: t, env: env}
	p := NewPolicy(env)
	p.Tick(now, d.gate.State)
	d.save(p, now)
	return d
}

func (d *distributed) load() *Policy {
	p := NewPolicy(d.env)
	var s PolicyState
	if err := json.Unmarshal(d.state, &s); err != nil {
		d.t.Fatal(err)
	}
	if err := p.SetState(s); err != nil {
		d.t.Fatal(err)
	}
	return p
}

func (d *distributed) save(p *Policy, now time.Time) {
	d.gate.Params = p.Params(now)
	raw, err := json.Marshal(p.State())
	if err != nil {
		d.t.Fatal(err)
	}
	d.state = raw
}

func (d *distributed) refreshIfStale(now time.Time) {
	vu, vo := d.gate.Params.ValidUntil, d.gate.Params.ValidUntilOK
	if !vu.IsZero() && !now.Before(vu) || vo > 0 && d.gate.State.OK >= vo {
		p := d.load()
		p.Tick(now, d.gate.State)
		d.save(p, now)
	}
}

func (d *distributed) canSend(now time.Time) time.Duration {
	d.refreshIfStale(now)
	return d.gate.CanSend(now, 1)
}

func (d *distributed) sent(now time.Time) {
	d.refreshIfStale(now)
	d.gate.RecordSent(now, 1, 0)
}

func (d *distributed) done(now time.Time, o Outcome) {
	d.gate.RecordDone(now, o.Class, o.Latency)
	if sharedSignal(o.Signal, d.env.Config.RateControl.Enabled) { // as the shared throttler: no update for an accepted answer alone
		p := d.load()
		p.OnFeedback(now, o.Signal, d.gate.State)
		d.save(p, now)
	}
}

// The contract's promise: a gate that refreshes its parameters only when
// ValidUntil (or ValidUntilOK) has passed, with the policy serialized in between, admits
// exactly like the in-memory manager that re-derives them on every call.
func TestDistributedGateMatchesInMemory(t *testing.T) {
	configs := []struct {
		name string
		kv   []any
	}{
		{"defaults", nil},
		{"short windows", []any{"BACKOFF_WINDOW", 2.0, "BACKOFF_MIN_DELAY", 0.2}},
		{"pacing off, delay", []any{"BACKOFF_RETRY_AFTER_PACING", false, "DOWNLOAD_DELAY", 0.1}},
		{"rampup", []any{"BACKOFF_WINDOW", 1.5, "THROTTLING_SCOPES", map[string]any{"example.com": map[string]any{
			"concurrency": 6, "delay": 0.4, "rampup": map[string]any{"backoff_target": []any{1, 2}, "min_delay": 0.05},
			"backoff": map[string]any{"min_delay": 0.1}}}}},
		{"quota", []any{"THROTTLING_SCOPES", map[string]any{"example.com": map[string]any{"quota": 7.0, "window": 3.0}}}},
		{"rate controller", []any{"THROTTLING_RATE_CONTROL", true}},
		{"rate controller, rampup", []any{"THROTTLING_RATE_CONTROL", true, "BACKOFF_WINDOW", 1.5,
			"THROTTLING_SCOPES", map[string]any{"example.com": map[string]any{"rampup": true, "concurrency": 6}}}},
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ReadConfig(testSettings(t, c.kv...))
			if err != nil {
				t.Fatal(err)
			}
			env := ScopeEnv{Config: cfg.Scope("example.com")}
			mem := NewThrottlingScopeManager(env)
			var dist *distributed // created at its first use, as the in-memory scope
			rng := rand.New(rand.NewPCG(7, 11))
			type flight struct {
				sent, done time.Time
			}
			var inflight []flight
			now := t0
			for step := range 3000 {
				now = now.Add(time.Duration(rng.IntN(150)) * time.Millisecond)
				if dist == nil {
					dist = newDistributed(t, env, now)
				}
				// Complete what is due, in order, with a random outcome.
				slices.SortFunc(inflight, func(a, b flight) int { return a.done.Compare(b.done) })
				rest := inflight[:0]
				for _, f := range inflight {
					if f.done.After(now) {
						rest = append(rest, f)
						continue
					}
					// As the throttler reports them (OutcomeOf): an accepted
					// answer's signal carries its latency.
					lat := f.done.Sub(f.sent)
					o := Outcome{Class: OutcomeOK, Latency: lat, Signal: Signal{SentAt: f.sent, Latency: lat}}
					switch r := rng.IntN(20); {
					case r == 0:
						o = Outcome{Class: OutcomeRefused, Signal: Signal{Trigger: true, SentAt: f.sent}}
					case r == 1:
						o = Outcome{Class: OutcomeRefused, Signal: Signal{Trigger: true, SentAt: f.sent, Delay: time.Duration(1+rng.IntN(3)) * sec}}
					case r == 3:
						o.Signal.RateLimit = &RateLimit{Remaining: float64(rng.IntN(4)), HasRemaining: true, Reset: time.Second, Quota: 20, Window: sec}
					case r == 2:
						o = Outcome{Class: OutcomeOther}
					}
					mem.RecordOutcome(f.done, o)
					dist.done(f.done, o)
				}
				inflight = rest
				for {
					wm, wd := mem.CanSend(now, 1), dist.canSend(now)
					if wm != wd {
						t.Fatalf("step %d at +%v: in memory waits %v, distributed %v\nmemory policy %+v\ndistributed    %s", step, now.Sub(t0), wm, wd, mem.policy.State(), dist.state)
					}
					if wm != 0 {
						break
					}
					mem.RecordSent(now, 1)
					dist.sent(now)
					inflight = append(inflight, flight{now, now.Add(time.Duration(5+rng.IntN(300)) * time.Millisecond)})
				}
			}
			// FullSeconds compares Active with the concurrency of the
			// parameters in force, which the distributed gate learns of at
			// its next refresh only: it may differ a little.
			ms, ds := mem.gate.State, dist.gate.State
			ms.FullSeconds, ds.FullSeconds = 0, 0
			if !reflect.DeepEqual(ms, ds) {
				t.Fatalf("gate states differ:\nmemory      %+v\ndistributed %+v", mem.gate.State, dist.gate.State)
			}
		})
	}
}
