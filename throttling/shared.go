package throttling

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// Shared keeps the scopes' state outside the process, for a crawl whose
// worker processes share it (a distributed crawl; package pqueue/redisq
// implements it on Redis). Each scope's Gate lives in the shared store and
// its operations run there atomically (the frontier's pop admits queued
// requests; Admit below the others); its Policy runs here, in Go, on a
// state read from the store and written back with optimistic concurrency
// (Update). The shared store's clock times every decision, so the
// workers' clocks do not matter.
//
// With Options.Shared the throttler keeps no scope state of its own for
// admissions: Admit, Done, DelayScope and SetRobotsDelay go through
// Shared, and the scheduler's frontier asks it for gate parameters
// (InitialParams, RefreshScope). ScopeWait, Sent and Wait (the in-memory
// queues' interface) are not used in that mode.
type Shared interface {
	// Admit is the gate for a request sent outside the scheduler
	// (robots.txt, Crawler.Download): if every scope can send, the send is
	// recorded and its time returned (local clock); otherwise the wait
	// (UntilSlotFree when a concurrency slot must free up). With noSlot
	// the request does not wait for a slot, but takes one.
	Admit(ctx context.Context, scopes Scopes, noSlot bool) (sentAt time.Time, wait time.Duration, err error)
	// Release records how the request sent at sentAt ended in each of its
	// scopes (classes in the order of its scopes; latency from its send)
	// and frees its slots: at once when now is true, else when the request
	// is acknowledged to the scheduler (a queued request) or soon after (a
	// request sent outside the scheduler). Unknown send times are ignored.
	// A scope whose class is OutcomeNotSent gets the request's turn back,
	// as Gate.GiveBack does.
	Release(ctx context.Context, sentAt time.Time, classes []OutcomeClass, latency time.Duration, now bool) error
	// Update changes a scope's policy: it reads the scope's policy record
	// (nil if the job has none yet), its gate's state and the shared
	// clock's now, calls fn, and stores what fn returns unless another
	// worker stored a record in between, in which case it reads again and
	// calls fn again. fn returns false to store nothing.
	Update(ctx context.Context, scope string, fn PolicyUpdate) error
	// Offset is the shared clock minus the local one (as last measured).
	Offset() time.Duration
}

// PolicyUpdate computes a scope's new policy record and gate parameters
// from its stored record, its gate's state and the shared clock (see
// Shared.Update).
type PolicyUpdate func(now time.Time, record []byte, g GateState) (PolicyWrite, bool)

// PolicyWrite is what a PolicyUpdate stores.
type PolicyWrite struct {
	// Params are the gate's new parameters (Policy.Params).
	Params GateParams
	// Record is the scope's policy record (opaque to the store).
	Record []byte
	// BackingOff lists the scope among those backing off (jobs inspect).
	BackingOff bool
	// Consumed and Remaining correct the gate's quota (Gate.Reconcile),
	// applied once with the write.
	Consumed, Remaining *float64
}

// sharedRecord is a scope's policy record in the shared store: the
// policy's state and the robots.txt Crawl-delay applied to the scope (a
// configuration change the policy's state does not carry).
type sharedRecord struct {
	Policy      *PolicyState  `json:"policy,omitempty"`
	RobotsDelay time.Duration `json:"robots_delay_ns,omitempty"`
	HasRobots   bool          `json:"has_robots,omitempty"`
}

// InitialParams returns the gate parameters of scope in its configured
// state, for the first request of a scope the shared store has never seen.
func (t *Throttler) InitialParams(scope string) GateParams {
	t.mu.Lock()
	defer t.mu.Unlock()
	return NewPolicy(ScopeEnv{Config: t.cfg.Scope(scope), Rand: t.rnd}).Params(time.Time{})
}

// RefreshScope brings scope's gate parameters in the shared store up to
// date: its policy applies the time passed (recovery, rampup windows, pace
// recovery) and writes them. The frontier calls it for a gate that is
// missing or stale (its ValidUntil has passed, or its OK counter reached
// ValidUntilOK).
func (t *Throttler) RefreshScope(ctx context.Context, scope string) error {
	if t.shared == nil {
		return nil
	}
	return t.shared.Update(ctx, scope, func(now time.Time, rec []byte, g GateState) (PolicyWrite, bool) {
		t.mu.Lock()
		defer t.mu.Unlock()
		m, r := t.loadShared(scope, rec, now, g)
		m.policy.Tick(now, g)
		return t.saveShared(m, r, now, ScopeFeedback{}), true
	})
}

// loadShared builds scope's manager from its shared record: the
// configuration, the robots.txt Crawl-delay, then the saved state (or, for
// a scope without one, its first tick at now). Callers hold t.mu.
func (t *Throttler) loadShared(scope string, rec []byte, now time.Time, g GateState) (*ThrottlingScopeManager, sharedRecord) {
	cfg := t.cfg.Scope(scope)
	m := NewThrottlingScopeManager(ScopeEnv{Config: cfg, Rand: t.rnd, Debug: t.dbg})
	var r sharedRecord
	if len(rec) > 0 {
		if err := json.Unmarshal(rec, &r); err != nil {
			t.log.Warn().Err(err).Str("scope", scope).Msg("throttling: unreadable shared policy record; starting the scope over from its configuration")
			r = sharedRecord{}
		}
	}
	if r.HasRobots {
		applyRobots(m, cfg, r.RobotsDelay)
	}
	if r.Policy != nil {
		if err := m.policy.SetState(*r.Policy); err != nil {
			t.log.Warn().Err(err).Str("scope", scope).Msg("throttling: shared policy state ignored")
		}
	} else {
		m.policy.Tick(now, g)
	}
	return m, r
}

// saveShared is what to store for m's policy at now.
func (t *Throttler) saveShared(m *ThrottlingScopeManager, r sharedRecord, now time.Time, f ScopeFeedback) PolicyWrite {
	p := m.policy
	st := p.State()
	r.Policy = &st
	raw, _ := json.Marshal(r)
	params := p.Params(now)
	return PolicyWrite{Params: params, Record: raw, BackingOff: p.backingOff() || params.BlockedUntil.After(now),
		Consumed: f.Consumed, Remaining: f.Remaining}
}

// feedbackUpdate applies one outcome's signal and quota correction to
// scope's policy; done, when set, is the request's completion in the
// scope, which the gate has not counted yet (it is released after).
func (t *Throttler) feedbackUpdate(scope string, sig Signal, f ScopeFeedback, done *Outcome) PolicyUpdate {
	if !sig.SentAt.IsZero() {
		sig.SentAt = t.sharedSentAt(sig.SentAt)
	}
	return func(now time.Time, rec []byte, g GateState) (PolicyWrite, bool) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if done != nil {
			g = counted(g, *done)
		}
		m, r := t.loadShared(scope, rec, now, g)
		m.policy.OnFeedback(now, sig, g)
		if !sig.empty() {
			m.policy.debug("shared_feedback").Msg("throttling: feedback applied to the shared policy")
		}
		return t.saveShared(m, r, now, f), true
	}
}

// SharedSendTimes is an optional Shared method: the shared clock's time
// of a request's admission, the very value its gates recorded as their
// last send (GateState.LastSent), for the request whose send time is
// sentAt (as Admit or the shared frontier gave it); false when the store
// no longer knows it. The policy names a refusal's request by it (the
// rate controller's gap bounds read the gap before it only when it is
// still the gate's last send); the local time moved by the clock offset,
// re-measured at every round trip, seldom equals it.
type SharedSendTimes interface {
	SharedSentAt(sentAt time.Time) (time.Time, bool)
}

// sharedSentAt is a request's send time (local, as admitted) in the
// shared clock: the store's record of its admission, or else sentAt moved
// by the clock offset as last measured.
func (t *Throttler) sharedSentAt(sentAt time.Time) time.Time {
	if st, ok := t.shared.(SharedSendTimes); ok {
		if at, ok := st.SharedSentAt(sentAt); ok {
			return at
		}
	}
	return sentAt.Add(t.shared.Offset())
}

// admitShared is Admit with the gates in the shared store. A wait on a
// slot is polled: the completion that frees it may happen in another
// process.
func (t *Throttler) admitShared(ctx context.Context, scopes Scopes) (time.Time, error) {
	if len(scopes) == 0 {
		return t.clock.Now(), nil
	}
	noSlot, _ := ctx.Value(noSlotKey{}).(bool)
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		at, wait, err := t.shared.Admit(ctx, scopes, noSlot)
		if err != nil {
			return time.Time{}, err
		}
		if wait <= 0 {
			return at, nil
		}
		tm := t.clock.NewTimer(min(wait, 100*time.Millisecond))
		select {
		case <-ctx.Done():
		case <-tm.C():
		}
		tm.Stop()
	}
}

// doneShared is Done with the scopes' state in the shared store: the
// feedback (backoff triggers, server delays, RateLimit headers, quota
// corrections) goes to the policies, then the request's slots are freed
// and its completion counted in each scope's gate. Without feedback the
// release waits for the request's acknowledgement (no round trip of its
// own); with feedback it happens right after the policies' writes.
func (t *Throttler) doneShared(ctx context.Context, req *spider.Request, scopes Scopes, sentAt time.Time, res *spider.Response, err error, fb Feedback, latency time.Duration, notSent bool) {
	dt := dontTrack(req)
	classes := make([]OutcomeClass, len(scopes))
	type update struct {
		scope string
		sig   Signal
		f     ScopeFeedback
		done  *Outcome // the request's completion in this scope, not yet counted by the gate
	}
	var ups []update
	for i, s := range scopes {
		f := fb[s.Name]
		o := OutcomeOf(f, sentAt, latency, res, err, dt)
		if notSent {
			o.Class, o.SentAt, o.Amount = OutcomeNotSent, sentAt, s.Amount
		}
		classes[i] = o.Class
		if sharedSignal(o.Signal, t.cfg.Scope(s.Name).RateControl.Enabled) || f.Consumed != nil || f.Remaining != nil {
			ups = append(ups, update{s.Name, o.Signal, f, &o})
		}
	}
	for name, f := range fb {
		if !scopes.Has(name) && (f.Trigger || f.Consumed != nil || f.Remaining != nil) {
			var sig Signal
			if f.Trigger {
				sig = Signal{Trigger: true, SentAt: sentAt, Delay: f.Delay}
			}
			ups = append(ups, update{name, sig, f, nil})
		}
	}
	// The policies first, then the release: a Retry-After must hold the
	// gate before the request's slot is free, or another worker (woken by
	// the release) could send inside the window. The policies see the
	// completion as counted, as in memory (RecordDone, then the feedback).
	for _, u := range ups {
		if uerr := t.shared.Update(ctx, u.scope, t.feedbackUpdate(u.scope, u.sig, u.f, u.done)); uerr != nil {
			t.log.Error().Err(uerr).Str("scope", u.scope).Msg("throttling: cannot apply feedback to the scope's shared policy")
		}
	}
	if len(scopes) > 0 {
		if rerr := t.shared.Release(ctx, sentAt, classes, latency, len(ups) > 0); rerr != nil {
			t.log.Warn().Err(rerr).Str("url", req.URL.Redacted()).Msg("throttling: releasing a request's scopes in the shared store failed; its acknowledgement will")
		}
	}
}

// counted is g with the completion o recorded, as Gate.RecordDone would
// (the counters the policy reads; the in-flight integrals are left).
func counted(g GateState, o Outcome) GateState {
	g.Active = max(0, g.Active-1)
	switch o.Class {
	case OutcomeOK:
		g.OK++
		if o.Latency > 0 {
			g.LatencySum += o.Latency
			g.LatencyN++
		}
	case OutcomeRefused:
		g.Refused++
	default:
		g.Other++
	}
	return g
}

// sharedSignal reports whether sig changes a scope's policy, so that it
// is worth a policy update in the shared store (a read and a write): a
// trigger, a server delay, RateLimit headers when the scope's rate
// controller reads them (rateControl). An accepted answer alone
// (its latency) does not: the gate counts it with the release, and the
// policy reads those counters when its parameters go stale (ValidUntil,
// ValidUntilOK), as the in-memory policy reads them at its next tick. So
// the steady path of a distributed crawl stays at two round trips per
// request.
func sharedSignal(sig Signal, rateControl bool) bool {
	return sig.Trigger || sig.Delay > 0 || sig.RateLimit != nil && rateControl
}

// delayScopeShared is DelayScope on the shared policy.
func (t *Throttler) delayScopeShared(scope string, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sig := Signal{Trigger: true, Delay: d, Uncapped: true}
	if err := t.shared.Update(ctx, scope, t.feedbackUpdate(scope, sig, ScopeFeedback{}, nil)); err != nil {
		t.log.Error().Err(err).Str("scope", scope).Msg("throttling: DelayScope could not reach the shared store")
	}
}

// setRobotsDelayShared applies a robots.txt Crawl-delay to scope's shared
// policy, so that it holds for every worker (the first worker that reads
// the robots.txt writes it; the others find it there).
func (t *Throttler) setRobotsDelayShared(scope string, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := t.shared.Update(ctx, scope, func(now time.Time, rec []byte, g GateState) (PolicyWrite, bool) {
		var r sharedRecord
		if len(rec) > 0 && json.Unmarshal(rec, &r) == nil && r.HasRobots && r.RobotsDelay == d {
			return PolicyWrite{}, false
		}
		r.HasRobots, r.RobotsDelay = true, d
		raw, _ := json.Marshal(r)
		t.mu.Lock()
		defer t.mu.Unlock()
		m, r := t.loadShared(scope, raw, now, g)
		m.policy.Tick(now, g)
		return t.saveShared(m, r, now, ScopeFeedback{}), true
	})
	if err != nil {
		t.log.Error().Err(err).Str("scope", scope).Msg("throttling: the robots.txt Crawl-delay could not be written to the shared store")
	}
}

// SharedRobots is an optional Shared method set: the robots.txt answers of
// a distributed crawl, kept once for every worker (middleware.RobotsTxt
// uses it through Throttler.SharedRobots), so that each origin's
// robots.txt is fetched by one worker.
type SharedRobots interface {
	// RobotsTxt returns the answer stored for origin (found), or claims
	// its fetch for this worker when none is stored and no other worker
	// claimed it (claimed: fetch it, then StoreRobotsTxt or
	// ReleaseRobotsTxt); neither while another worker fetches it.
	RobotsTxt(ctx context.Context, origin string) (status int, body []byte, found, claimed bool, err error)
	// StoreRobotsTxt keeps origin's answer for ttl and ends the claim.
	StoreRobotsTxt(ctx context.Context, origin string, status int, body []byte, ttl time.Duration) error
	// ReleaseRobotsTxt gives this worker's claim up without an answer (a
	// failed fetch): the next worker that asks claims it.
	ReleaseRobotsTxt(ctx context.Context, origin string)
}

// SharedRobots returns the shared store's robots.txt answers, or nil when
// the crawl is not distributed or its store keeps none.
func (t *Throttler) SharedRobots() SharedRobots {
	if r, ok := t.shared.(SharedRobots); ok {
		return r
	}
	return nil
}
