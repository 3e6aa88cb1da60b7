// Package throttling decides when each request may be sent. It is a Go
// implementation of Scrapy's throttling design (scrapy/scrapy PR #6931),
// from which it takes the model, the setting names and the extension
// points: requests belong to throttling scopes (by default their host),
// each scope has a concurrency limit, a delay and optionally a quota, and
// scopes back off when servers signal overload (429/5xx, network errors,
// Retry-After, RateLimit-Reset), recover one step per quiet window, and
// with rampup probe for the fastest rate a server tolerates.
// docs/throttling.md describes it for users.
//
// The Throttler is the one object the engine and schedulers talk to. The
// design's extension points are interfaces found by name in registries:
// Manager (THROTTLING_MANAGER) assigns scopes and interprets outcomes;
// ScopeManager (THROTTLING_SCOPE_MANAGER, or a scope's "manager" key)
// keeps one scope's state. Time is always passed in (now) or read from an
// injectable clock, so every rule is testable with a fake clock.
//
// File map: config.go (settings and THROTTLING_SCOPES validation),
// scopemanager.go (the default scope manager: a Policy and a Gate),
// gate.go (admission-time state, mechanical), policy.go (every rule that
// decides how fast a scope goes, serializable state), backoff.go,
// rampup.go, quota.go, headers.go (Retry-After, RateLimit-Reset), defaultmanager.go,
// registrable.go, helpers.go (AddScope's friends UpdateScopeBackoff and
// CacheScopes), registry.go, eviction.go (THROTTLING_SCOPE_LIMIT and
// THROTTLING_SCOPE_MAX_IDLE, Sweep), robots.go (Crawl-delay), snapshot.go
// (JOBDIR), view.go (View and Views, read-only views of scopes), turn.go
// (WithTurnOf: robots.txt in its seed's turn), delay.go
// (throttling_delay), startrate.go (MAX_STARTS_PER_SECOND),
// autothrottle.go (deprecated settings).
package throttling

import (
	"container/list"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/downloader/dnscache"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Request meta keys read by the throttler.
const (
	// MetaScopes assigns custom scopes: a string, a list of strings, or a
	// map of scope name -> quota amount.
	MetaScopes = "throttling_scopes"
	// MetaDelay holds a request for this many seconds the first time it
	// reaches the throttling gate (see TakeRequestDelay).
	MetaDelay = "throttling_delay"
	// MetaDontTrack keeps a request's outcome from triggering backoff.
	MetaDontTrack = "throttling_dont_track"
)

// Options configure a Throttler beyond its settings.
type Options struct {
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Log receives warnings and, with THROTTLING_DEBUG, decisions.
	Log zerolog.Logger
	// DNS is the downloader's DNS cache, for IP scopes.
	DNS *dnscache.Cache
	// Rand is the source of jitter; nil seeds one randomly.
	Rand *rand.Rand
	// Manager replaces THROTTLING_MANAGER.
	Manager Manager
	// Shared keeps the scopes' state in a store shared by the worker
	// processes of a distributed crawl (see Shared); nil keeps it here.
	Shared Shared
}

// Throttler holds every scope's state and answers the engine's and the
// scheduler's questions. It is safe for concurrent use.
type Throttler struct {
	clock   clock.Clock
	log     zerolog.Logger
	dbg     zerolog.Logger
	rnd     *rand.Rand
	manager Manager
	cfg     *Config
	shared  Shared // the scopes' state of a distributed crawl, or nil

	mu        sync.Mutex
	scopes    map[string]*scopeEntry
	lru       *list.List // of *scopeEntry, front = most recently used
	lastSweep time.Time
	evictions int64
	robots    map[string]time.Duration // robots.txt Crawl-delay by scope, capped
	warned    map[string]bool          // robots.txt conflicts already logged
	watchers  []func(scope string)
	onEvict   []func(scope string)
	changed   chan struct{} // closed and replaced on a state change, when changedTaken
	// changedTaken: an Admit waits on changed, so the next state change
	// closes it; with nobody waiting (the scheduler-gated path) there is
	// no channel to make per request.
	changedTaken bool
}

type scopeEntry struct {
	name    string
	mgr     ScopeManager
	elem    *list.Element
	touched time.Time
}

// New builds a throttler from settings. Invalid throttling settings give an
// error (a *ConfigError, errors.Is ErrInvalidConfig) naming the setting,
// scope and key.
func New(s *settings.Settings, opts Options) (*Throttler, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	cfg, err := ReadConfig(s)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		opts.Log.Warn().Msg(w)
	}
	t := &Throttler{clock: opts.Clock, log: opts.Log, dbg: zerolog.Nop(), rnd: opts.Rand, cfg: cfg, shared: opts.Shared,
		scopes: map[string]*scopeEntry{}, lru: list.New(), robots: map[string]time.Duration{},
		warned: map[string]bool{}, changed: make(chan struct{})}
	if cfg.Debug {
		t.dbg = opts.Log
	}
	t.manager = opts.Manager
	if t.manager == nil {
		f, err := lookupManager(cfg.Manager)
		if err != nil {
			return nil, &ConfigError{Setting: "THROTTLING_MANAGER", Msg: err.Error()}
		}
		m, err := f(ManagerDeps{Settings: s, Config: cfg, Log: opts.Log, DNS: opts.DNS, Clock: opts.Clock})
		if err != nil {
			return nil, &ConfigError{Setting: "THROTTLING_MANAGER", Msg: fmt.Sprintf("building %q: %v", cfg.Manager, err)}
		}
		t.manager = m
	}
	// Build each configured scope's manager once so that a custom
	// manager's objections to its configuration surface now.
	for _, name := range cfg.ConfiguredScopes() {
		if _, err := t.newScopeManager(cfg.Scope(name)); err != nil {
			return nil, &ConfigError{Setting: "THROTTLING_SCOPES", Scope: name, Key: "manager", Msg: err.Error()}
		}
	}
	if _, err := t.newScopeManager(cfg.Scope("example.com")); err != nil {
		return nil, &ConfigError{Setting: "THROTTLING_SCOPE_MANAGER", Msg: err.Error()}
	}
	return t, nil
}

// Config returns the throttling configuration.
func (t *Throttler) Config() *Config { return t.cfg }

// Manager returns the throttling manager in use.
func (t *Throttler) Manager() Manager { return t.manager }

// ScopeConfigFor returns the configuration of a scope: THROTTLING_SCOPES
// over the defaults for its kind.
func (t *Throttler) ScopeConfigFor(name string) ScopeConfig { return t.cfg.Scope(name) }

func (t *Throttler) newScopeManager(cfg ScopeConfig) (ScopeManager, error) {
	f, err := lookupScopeManager(cfg.Manager)
	if err != nil {
		return nil, err
	}
	m, err := f(ScopeEnv{Config: cfg, Rand: t.rnd, Debug: t.dbg})
	if err != nil {
		return nil, fmt.Errorf("scope manager %q: %w", cfg.Manager, err)
	}
	if m == nil {
		return nil, fmt.Errorf("scope manager %q returned nil", cfg.Manager)
	}
	return m, nil
}

// scope returns the state of name, creating (or recreating, after
// eviction) it, and marks it used. Callers hold t.mu.
func (t *Throttler) scope(name string, now time.Time) *scopeEntry {
	if e, ok := t.scopes[name]; ok {
		e.touched = now
		t.lru.MoveToFront(e.elem)
		return e
	}
	cfg := t.cfg.Scope(name)
	mgr, err := t.newScopeManager(cfg)
	if err != nil {
		// Validated at start-up; a manager failing later falls back to the
		// default rather than stopping the crawl.
		t.log.Error().Err(err).Str("scope", name).Msg("throttling: cannot build the scope's manager; using the default")
		mgr = NewThrottlingScopeManager(ScopeEnv{Config: cfg, Rand: t.rnd, Debug: t.dbg})
	}
	e := &scopeEntry{name: name, mgr: mgr, touched: now}
	if d, ok := t.robots[name]; ok {
		applyRobots(e.mgr, cfg, d)
	}
	e.elem = t.lru.PushFront(e)
	t.scopes[name] = e
	t.evictLocked(now, e)
	return e
}

// Scopes returns the scopes of req. A request with a throttling_scopes
// meta has exactly the scopes it names (a string, a list, or a mapping of
// scope to quota amount): the meta replaces the manager's scopes, as in
// Scrapy's throttling design (PR #6931), so an "api" scope can give an
// endpoint its own budget, faster or slower than its host's. To keep the
// host scope too, name it in the meta: {"api": 1, "example.com": 0}. The
// manager is asked only for requests without the meta.
func (t *Throttler) Scopes(ctx context.Context, req *spider.Request) (Scopes, error) {
	sc, err := MetaScopesOf(req)
	if err != nil {
		return nil, err
	}
	if sc == nil {
		if sc, err = t.manager.Scopes(ctx, req); err != nil {
			return nil, err
		}
	}
	if len(sc) == 0 {
		return nil, fmt.Errorf("request %s: throttling manager returned no scope", req)
	}
	return sc, nil
}

// MetaScopesOf parses the throttling_scopes meta of req: nil without the
// meta, else the request's whole set of scopes. A meta that names no scope
// (an empty list or mapping) or an empty scope name is an error naming
// the request.
func MetaScopesOf(req *spider.Request) (Scopes, error) {
	v := req.Get(MetaScopes)
	if v == nil {
		return nil, nil
	}
	var out Scopes
	bad := func(format string, args ...any) (Scopes, error) {
		return nil, fmt.Errorf("request %s: meta %s: %s", req, MetaScopes, fmt.Sprintf(format, args...))
	}
	add := func(name string, amount float64) bool {
		if name == "" {
			return false
		}
		out = AddScope(out, name, amount)
		return true
	}
	switch v := v.(type) {
	case string:
		if !add(v, 0) {
			return bad("empty scope name")
		}
	case []string:
		for _, s := range v {
			if !add(s, 0) {
				return bad("empty scope name")
			}
		}
	case []any:
		for _, s := range v {
			name, ok := s.(string)
			if !ok {
				return bad("item %v is not a string", s)
			}
			if !add(name, 0) {
				return bad("empty scope name")
			}
		}
	case map[string]bool:
		for k, in := range v {
			if in && !add(k, 0) {
				return bad("empty scope name")
			}
		}
	case map[string]struct{}:
		for k := range v {
			if !add(k, 0) {
				return bad("empty scope name")
			}
		}
	case map[string]float64:
		for k, a := range v {
			if a < 0 {
				return bad("amount of %q: %v is negative", k, a)
			}
			if !add(k, a) {
				return bad("empty scope name")
			}
		}
	case map[string]any:
		for k, a := range v {
			f, err := settings.NonNegative(settings.Float).Convert(a)
			if err != nil {
				return bad("amount of %q: %v", k, err)
			}
			if !add(k, f.(float64)) {
				return bad("empty scope name")
			}
		}
	default:
		return bad("want a string, a list of strings or a map of scope to amount, got %T", v)
	}
	if len(out) == 0 {
		return bad("names no scope (it replaces the request's scopes; remove the key to keep the host's)")
	}
	return out, nil
}

// Wait reports how long a request with scopes must wait at now: 0 when
// every scope allows it, UntilSlotFree when one is blocked on concurrency,
// else the longest delay among its scopes.
func (t *Throttler) Wait(now time.Time, scopes Scopes) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waitLocked(now, scopes, false, time.Time{})
}

// waitLocked is Wait for a request that needs no concurrency slot (noSlot)
// or takes the turn of the request sent at turn (non-zero; see WithTurnOf,
// which implies noSlot).
func (t *Throttler) waitLocked(now time.Time, scopes Scopes, noSlot bool, turn time.Time) time.Duration {
	var w time.Duration
	for _, s := range scopes {
		m := t.scope(s.Name, now).mgr
		if tt, ok := m.(TurnTaker); ok && !turn.IsZero() {
			w = max(w, tt.CanSendInTurnOf(now, turn, s.Amount))
			continue
		}
		d := m.CanSend(now, s.Amount)
		if d == UntilSlotFree && (noSlot || !turn.IsZero()) {
			d = 0
			if c, ok := m.(SlotFreeChecker); ok {
				d = c.CanSendWithoutSlot(now, s.Amount)
			}
		}
		w = max(w, d)
	}
	return w
}

// ScopeWait reports how long a request consuming amount of scope must wait
// at now (0, a delay, or UntilSlotFree).
func (t *Throttler) ScopeWait(now time.Time, scope string, amount float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.scope(scope, now).mgr.CanSend(now, amount)
}

// Sent records that a request with scopes was sent at now.
func (t *Throttler) Sent(now time.Time, scopes Scopes) {
	t.mu.Lock()
	t.sentLocked(now, scopes, time.Time{})
	t.mu.Unlock()
}

// sentLocked records a send of scopes at now; in the turn of the request
// sent at turn when it is not zero (see WithTurnOf).
func (t *Throttler) sentLocked(now time.Time, scopes Scopes, turn time.Time) {
	for _, s := range scopes {
		m := t.scope(s.Name, now).mgr
		if tt, ok := m.(TurnTaker); ok && !turn.IsZero() && tt.RecordSentInTurnOf(now, turn, s.Amount) {
			continue
		}
		m.RecordSent(now, s.Amount)
	}
	t.notifyLocked(scopes)
}

// dontTrack reports whether req's outcome must not feed backoff.
func dontTrack(req *spider.Request) bool {
	if b, _ := req.Get(MetaDontTrack).(bool); b {
		return true
	}
	b, _ := req.Get(MetaAutoThrottleDontAdjustDelay).(bool)
	return b
}

// Done records the outcome of a request sent at sentAt with scopes: res on
// success (any status), err on a download error, neither when the request
// was not downloaded (cut short before its answer). It frees the scopes'
// slots and applies the manager's feedback: backoff triggers, server
// delays, quota reconciliation. A request that never reached the server
// is reported with NotSent instead.
func (t *Throttler) Done(ctx context.Context, req *spider.Request, scopes Scopes, sentAt time.Time, res *spider.Response, err error) {
	t.done(ctx, req, scopes, sentAt, res, err, false)
}

// NotSent records that a request admitted at sentAt with scopes never
// reached the server: a downloader middleware answered it (an HTTP cache
// hit), dropped it (a URL robots.txt disallows) or rescheduled it, or it
// was refused before anything was sent. It frees the scopes' slots, with
// no feedback, and gives the request's turn back (OutcomeNotSent,
// Gate.GiveBack): in each scope where it is still the latest send, the
// delay runs again from the send before it and its quota amount is
// returned. So on a host with a 10 s Crawl-delay a disallowed URL costs
// no 10 s.
func (t *Throttler) NotSent(ctx context.Context, req *spider.Request, scopes Scopes, sentAt time.Time) {
	t.done(ctx, req, scopes, sentAt, nil, nil, true)
}

func (t *Throttler) done(ctx context.Context, req *spider.Request, scopes Scopes, sentAt time.Time, res *spider.Response, err error, notSent bool) {
	var fb Feedback
	var ferr error
	if !dontTrack(req) {
		if err != nil {
			fb, ferr = t.manager.ExceptionBackoff(ctx, req, err, scopes)
		} else if res != nil {
			fb, ferr = t.manager.ResponseBackoff(ctx, res, scopes)
		}
	}
	if ferr != nil {
		t.log.Error().Err(ferr).Str("url", req.URL.String()).Msg("throttling manager failed to interpret an outcome")
	}
	now := t.clock.Now()
	var latency time.Duration
	if res != nil || err != nil {
		latency = max(0, now.Sub(sentAt))
	}
	if t.shared != nil {
		t.doneShared(ctx, req, scopes, sentAt, res, err, fb, latency, notSent)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range scopes {
		f, hasFB := fb[s.Name]
		e := t.scope(s.Name, now)
		if hasFB {
			reconcile(e.mgr, now, f)
		}
		if r, ok := e.mgr.(OutcomeRecorder); ok {
			o := OutcomeOf(f, sentAt, latency, res, err, dontTrack(req))
			if notSent {
				o.Class, o.SentAt, o.Amount = OutcomeNotSent, sentAt, s.Amount
			}
			r.RecordOutcome(now, o)
			continue
		}
		e.mgr.RecordDone(now)
		if f.Trigger {
			e.mgr.RecordBackoff(now, BackoffSignal{SentAt: sentAt, Delay: f.Delay})
		}
	}
	changed := scopes
	for name, f := range fb {
		if scopes.Has(name) {
			continue
		}
		// Feedback for a scope the request did not belong to.
		e := t.scope(name, now)
		reconcile(e.mgr, now, f)
		if f.Trigger {
			e.mgr.RecordBackoff(now, BackoffSignal{SentAt: sentAt, Delay: f.Delay})
		}
		changed = AddScope(changed, name, 0)
	}
	t.notifyLocked(changed)
	t.sweepDueLocked(now)
}

func reconcile(m ScopeManager, now time.Time, f ScopeFeedback) {
	if f.Consumed != nil || f.Remaining != nil {
		m.ReconcileQuota(now, f.Consumed, f.Remaining)
	}
}

// OutcomeOf is how a request ended for one of its scopes, given the
// scope's feedback f (zero when the manager gave none), the send time, the
// latency, and the response or download error (both nil when the request
// was not downloaded): refused when f is a trigger, ok for any other
// response, other for the rest and for throttling_dont_track requests.
func OutcomeOf(f ScopeFeedback, sentAt time.Time, latency time.Duration, res *spider.Response, err error, dontTrack bool) Outcome {
	o := Outcome{Class: OutcomeOther, Latency: latency}
	switch {
	case dontTrack:
		return o
	case f.Trigger:
		o.Class = OutcomeRefused
		o.Signal = Signal{Trigger: true, SentAt: sentAt, Delay: f.Delay}
	case err == nil && res != nil:
		o.Class = OutcomeOK
		o.Signal = Signal{SentAt: sentAt, Latency: latency}
	}
	o.Signal.RateLimit = f.RateLimit
	return o
}

// DelayScope holds back every request of scope for at least d, counted as
// a backoff trigger and not capped by BACKOFF_MAX_DELAY. It is the Go form
// of crawler.throttler.delay_scope in Scrapy's throttling design (PR
// #6931), reachable from callbacks through spider.CrawlerFrom(ctx).Throttler.
func (t *Throttler) DelayScope(scope string, d time.Duration) {
	if t.shared != nil {
		t.delayScopeShared(scope, d)
		return
	}
	now := t.clock.Now()
	t.mu.Lock()
	t.scope(scope, now).mgr.RecordBackoff(now, BackoffSignal{Delay: d, Uncapped: true})
	t.notifyLocked(Scopes{{Name: scope}})
	t.mu.Unlock()
}

// Watch registers fn to be called after the state of a scope changes: a
// send, a completion, a backoff, a configuration change. fn is called with
// the throttler's lock held: it must be quick and must not call back into
// the throttler. Schedulers use it to re-evaluate the requests of that
// scope.
func (t *Throttler) Watch(fn func(scope string)) {
	t.mu.Lock()
	t.watchers = append(t.watchers, fn)
	t.mu.Unlock()
}

func (t *Throttler) notifyLocked(scopes Scopes) {
	for _, w := range t.watchers {
		for _, s := range scopes {
			w(s.Name)
		}
	}
	if t.changedTaken {
		close(t.changed)
		t.changed, t.changedTaken = make(chan struct{}), false
	}
}

type noSlotKey struct{}

// WithoutSlot returns a context under which Admit does not wait for (but
// still takes) a concurrency slot of the scopes; their delays, backoff and
// quotas still apply. The robots.txt middleware uses it: robots.txt is
// fetched while the request that needs it holds its host's slot, so
// waiting for a slot could wait forever.
func WithoutSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, noSlotKey{}, true)
}

// Admit blocks until every scope of scopes allows a request, records it as
// sent and returns the send time; it returns ctx's error if ctx ends first.
// This is the engine-gated path: the caller holds a concurrency slot while
// it waits (see the throttling-aware scheduler for the alternative). Under
// WithoutSlot it takes no slot's wait, under WithTurnOf it takes the turn
// of a request that did not reach the server (robots.txt, fetched for a
// host's first request, goes at once in that request's place).
func (t *Throttler) Admit(ctx context.Context, scopes Scopes) (time.Time, error) {
	if t.shared != nil {
		return t.admitShared(ctx, scopes)
	}
	noSlot, _ := ctx.Value(noSlotKey{}).(bool)
	turn := turnOf(ctx)
	var err error
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err // a stop wins over a scope that became ready at the same moment
		}
		t.mu.Lock()
		now := t.clock.Now()
		w := t.waitLocked(now, scopes, noSlot, turn)
		if w == 0 {
			t.sentLocked(now, scopes, turn)
			t.mu.Unlock()
			return now, nil
		}
		changed := t.changed
		t.changedTaken = true
		t.mu.Unlock()
		var timerC <-chan time.Time
		var tm clock.Timer
		if w != UntilSlotFree {
			tm = t.clock.NewTimer(w)
			timerC = tm.C()
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-changed:
		case <-timerC:
		}
		if tm != nil {
			tm.Stop()
		}
		if err != nil {
			return time.Time{}, err
		}
	}
}
