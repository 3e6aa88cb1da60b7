// Package throttling decides when each request may be sent, per the
// behaviour in spec/throttling.rst: requests belong to throttling scopes
// (by default their host), each scope has a concurrency limit and a delay,
// and scopes back off when servers signal overload (429/5xx, network
// errors, Retry-After, RateLimit-Reset).
//
// The Throttler is the one object the engine and schedulers talk to. The
// spec's extension points are interfaces: Manager (THROTTLING_MANAGER)
// assigns scopes and interprets outcomes; ScopeManager
// (THROTTLING_SCOPE_MANAGER) keeps one scope's state. Time is always passed
// in (now), so every rule is testable with a fake clock.
package throttling

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/internal/clock"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Request meta keys read by the throttler.
const (
	// MetaScopes assigns custom scopes: a string, a list of strings, or a
	// map of scope name -> quota amount.
	MetaScopes = "throttling_scopes"
	// MetaDelay holds a request for this many seconds the first time it
	// reaches the throttling gate.
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
	DNS *downloader.DNSCache
	// Rand is the source of jitter; nil seeds one randomly.
	Rand *rand.Rand
	// Manager replaces THROTTLING_MANAGER.
	Manager Manager
}

// Throttler holds every scope's state and answers the engine's and the
// scheduler's questions. It is safe for concurrent use.
type Throttler struct {
	clock   clock.Clock
	log     zerolog.Logger
	rnd     *rand.Rand
	manager Manager
	cfg     config

	mu       sync.Mutex
	scopes   map[string]*scopeEntry
	watchers []func(scope string)
	changed  chan struct{} // closed and replaced on every state change
}

type scopeEntry struct {
	name string
	mgr  ScopeManager
}

// config is what the throttler reads from settings once.
type config struct {
	perDomain, perIP, other int
	delay                   time.Duration
	jitter                  [2]float64
	scopes                  map[string]scopeOverride
	backoffCodes            map[int]bool
	backoffErrs             []error
}

type scopeOverride struct {
	concurrency, minConcurrency *int
	delay                       *time.Duration
	jitter                      *[2]float64
}

// New builds a throttler from settings. Invalid throttling settings give an
// error naming the setting, scope and key.
func New(s *settings.Settings, opts Options) (*Throttler, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	cfg, err := readConfig(s)
	if err != nil {
		return nil, err
	}
	t := &Throttler{clock: opts.Clock, log: opts.Log, rnd: opts.Rand, cfg: cfg,
		scopes: map[string]*scopeEntry{}, changed: make(chan struct{})}
	t.manager = opts.Manager
	if t.manager == nil {
		t.manager = &DefaultManager{PerIP: cfg.perIP > 0, DNS: opts.DNS, codes: cfg.backoffCodes, errs: cfg.backoffErrs}
	}
	return t, nil
}

func readConfig(s *settings.Settings) (config, error) {
	c := config{
		perDomain: s.Int("CONCURRENT_REQUESTS_PER_DOMAIN"),
		perIP:     s.Int("CONCURRENT_REQUESTS_PER_IP"),
		other:     s.Int("THROTTLING_SCOPE_CONCURRENCY"),
		delay:     s.Seconds("DOWNLOAD_DELAY"),
		scopes:    map[string]scopeOverride{},
	}
	j, err := parseJitter(s.Get("RANDOMIZE_DOWNLOAD_DELAY"))
	if err != nil {
		return c, fmt.Errorf("RANDOMIZE_DOWNLOAD_DELAY: %w", err)
	}
	c.jitter = j
	c.backoffCodes = map[int]bool{}
	for _, code := range s.Ints("BACKOFF_HTTP_CODES") {
		c.backoffCodes[code] = true
	}
	if c.backoffErrs, err = downloader.ResolveKinds("BACKOFF_EXCEPTIONS", s.Strings("BACKOFF_EXCEPTIONS")); err != nil {
		return c, err
	}
	for name, raw := range s.Map("THROTTLING_SCOPES") {
		m, ok := raw.(map[string]any)
		if !ok {
			return c, fmt.Errorf("THROTTLING_SCOPES: scope %q: want a mapping of keys, got %T", name, raw)
		}
		var o scopeOverride
		for k, v := range m {
			switch k {
			case "concurrency", "min_concurrency":
				n, err := settings.NonNegative(settings.Int).Convert(v)
				if err != nil {
					return c, fmt.Errorf("THROTTLING_SCOPES: scope %q: %s: %v", name, k, err)
				}
				i := n.(int)
				if k == "concurrency" {
					o.concurrency = &i
				} else {
					o.minConcurrency = &i
				}
			case "delay":
				f, err := settings.NonNegative(settings.Float).Convert(v)
				if err != nil {
					return c, fmt.Errorf("THROTTLING_SCOPES: scope %q: delay: %v", name, err)
				}
				d := time.Duration(f.(float64) * float64(time.Second))
				o.delay = &d
			case "jitter":
				jj, err := parseJitter(v)
				if err != nil {
					return c, fmt.Errorf("THROTTLING_SCOPES: scope %q: jitter: %v", name, err)
				}
				o.jitter = &jj
			case "quota", "window", "rampup", "backoff", "manager", "ignore_robots_txt":
				// Handled by the full scope manager.
			default:
				return c, fmt.Errorf("THROTTLING_SCOPES: scope %q: unknown key %q (known: concurrency, min_concurrency, delay, jitter, quota, window, rampup, backoff, manager, ignore_robots_txt)", name, k)
			}
		}
		c.scopes[name] = o
	}
	return c, nil
}

// parseJitter reads RANDOMIZE_DOWNLOAD_DELAY / jitter values: true = ±0.5,
// false = none, f = ±f, [low, high].
func parseJitter(v any) ([2]float64, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return [2]float64{-0.5, 0.5}, nil
		}
		return [2]float64{}, nil
	case [2]float64:
		return x, nil
	}
	f, err := settings.OneOf(settings.NonNegative(settings.Float), settings.FloatPair).Convert(v)
	if err != nil {
		return [2]float64{}, err
	}
	switch x := f.(type) {
	case float64:
		return [2]float64{-x, x}, nil
	case [2]float64:
		return x, nil
	}
	return [2]float64{}, fmt.Errorf("unexpected %T", f)
}

// ScopeConfigFor returns the configuration of a scope: THROTTLING_SCOPES
// over the defaults for its kind.
func (t *Throttler) ScopeConfigFor(name string) ScopeConfig {
	cfg := ScopeConfig{Delay: t.cfg.delay, Jitter: t.cfg.jitter, MinConcurrency: 1}
	switch KindOfScope(name) {
	case KindDomain:
		cfg.Concurrency = t.cfg.perDomain
	case KindIP:
		cfg.Concurrency = t.cfg.perIP
	default:
		cfg.Concurrency = t.cfg.other
		cfg.Delay = 0
	}
	if o, ok := t.cfg.scopes[name]; ok {
		if o.concurrency != nil {
			cfg.Concurrency = *o.concurrency
		}
		if o.minConcurrency != nil {
			cfg.MinConcurrency = *o.minConcurrency
		}
		if o.delay != nil {
			cfg.Delay = *o.delay
		}
		if o.jitter != nil {
			cfg.Jitter = *o.jitter
		}
	}
	return cfg
}

// scope returns the state of name, creating it. Callers hold t.mu.
func (t *Throttler) scope(name string) *scopeEntry {
	e, ok := t.scopes[name]
	if !ok {
		e = &scopeEntry{name: name, mgr: NewBasicScopeManager(t.ScopeConfigFor(name), t.rnd)}
		t.scopes[name] = e
	}
	return e
}

// Scopes returns the scopes of req: the manager's, plus those of the
// request's throttling_scopes meta.
func (t *Throttler) Scopes(ctx context.Context, req *spider.Request) (Scopes, error) {
	sc, err := t.manager.GetScopes(ctx, req)
	if err != nil {
		return nil, err
	}
	extra, err := MetaScopesOf(req)
	if err != nil {
		return nil, err
	}
	for _, e := range extra {
		sc = AddScope(sc, e.Name, e.Amount)
	}
	return sc, nil
}

// MetaScopesOf parses the throttling_scopes meta of req.
func MetaScopesOf(req *spider.Request) (Scopes, error) {
	var out Scopes
	switch v := req.Get(MetaScopes).(type) {
	case nil:
	case string:
		out = AddScope(out, v, 0)
	case []string:
		for _, s := range v {
			out = AddScope(out, s, 0)
		}
	case []any:
		for _, s := range v {
			name, ok := s.(string)
			if !ok {
				return nil, fmt.Errorf("request %s: meta %s: item %v is not a string", req, MetaScopes, s)
			}
			out = AddScope(out, name, 0)
		}
	case map[string]float64:
		for k, a := range v {
			out = AddScope(out, k, a)
		}
	case map[string]any:
		for k, a := range v {
			f, err := settings.Float.Convert(a)
			if err != nil {
				return nil, fmt.Errorf("request %s: meta %s: amount of %q: %v", req, MetaScopes, k, err)
			}
			out = AddScope(out, k, f.(float64))
		}
	default:
		return nil, fmt.Errorf("request %s: meta %s: want a string, a list of strings or a map of scope to amount, got %T", req, MetaScopes, v)
	}
	return out, nil
}

// Wait reports how long a request with scopes must wait at now: 0 when
// every scope allows it, UntilSlotFree when one is blocked on concurrency,
// else the longest delay among its scopes.
func (t *Throttler) Wait(now time.Time, scopes Scopes) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waitLocked(now, scopes)
}

func (t *Throttler) waitLocked(now time.Time, scopes Scopes) time.Duration {
	var w time.Duration
	for _, s := range scopes {
		w = max(w, t.scope(s.Name).mgr.CanSend(now, s.Amount))
	}
	return w
}

// ScopeWait reports how long a request consuming amount of scope must wait
// at now (0, a delay, or UntilSlotFree).
func (t *Throttler) ScopeWait(now time.Time, scope string, amount float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.scope(scope).mgr.CanSend(now, amount)
}

// Sent records that a request with scopes was sent at now.
func (t *Throttler) Sent(now time.Time, scopes Scopes) {
	t.mu.Lock()
	for _, s := range scopes {
		t.scope(s.Name).mgr.RecordSent(now, s.Amount)
	}
	t.notifyLocked(scopes)
	t.mu.Unlock()
}

// Done records the outcome of a request sent at sentAt with scopes: res on
// success (any status), err on a download error. It frees the scopes'
// slots and applies backoff feedback from the manager.
func (t *Throttler) Done(ctx context.Context, req *spider.Request, scopes Scopes, sentAt time.Time, res *spider.Response, err error) {
	var fb Feedback
	var ferr error
	if dontTrack, _ := req.Get(MetaDontTrack).(bool); !dontTrack {
		if err != nil {
			fb, ferr = t.manager.GetExceptionBackoff(ctx, req, err, scopes)
		} else if res != nil {
			fb, ferr = t.manager.GetResponseBackoff(ctx, res, scopes)
		}
	}
	if ferr != nil {
		t.log.Error().Err(ferr).Str("url", req.URL.String()).Msg("throttling manager failed to interpret an outcome")
	}
	now := t.clock.Now()
	t.mu.Lock()
	for _, s := range scopes {
		t.scope(s.Name).mgr.RecordDone(now)
	}
	for name, f := range fb {
		e := t.scope(name)
		if f.Consumed != nil || f.Remaining != nil {
			e.mgr.ReconcileQuota(now, f.Consumed, f.Remaining)
		}
		if f.Trigger {
			e.mgr.RecordBackoff(now, BackoffSignal{SentAt: sentAt, Delay: f.Delay})
		}
	}
	t.notifyLocked(scopes)
	t.mu.Unlock()
}

// DelayScope holds back every request of scope for at least d, counted as
// a backoff trigger and not capped by BACKOFF_MAX_DELAY.
func (t *Throttler) DelayScope(scope string, d time.Duration) {
	now := t.clock.Now()
	t.mu.Lock()
	t.scope(scope).mgr.RecordBackoff(now, BackoffSignal{Delay: d, Uncapped: true})
	t.notifyLocked(Scopes{{Name: scope}})
	t.mu.Unlock()
}

// Watch registers fn to be called after the state of a scope changes: a send, a completion, a backoff, a configuration
// change. Schedulers use it to re-evaluate the requests of that scope.
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
	close(t.changed)
	t.changed = make(chan struct{})
}

// Admit blocks until every scope of scopes allows a request, records it as
// sent and returns the send time; it returns ctx's error if ctx ends first.
// This is the engine-gated path: the caller holds a concurrency slot while
// it waits (see the throttling-aware scheduler for the alternative).
func (t *Throttler) Admit(ctx context.Context, scopes Scopes) (time.Time, error) {
	var err error
	for {
		t.mu.Lock()
		now := t.clock.Now()
		w := t.waitLocked(now, scopes)
		if w == 0 {
			for _, s := range scopes {
				t.scope(s.Name).mgr.RecordSent(now, s.Amount)
			}
			t.notifyLocked(scopes)
			t.mu.Unlock()
			return now, nil
		}
		changed := t.changed
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

// DefaultManager is the default THROTTLING_MANAGER: one scope per host
// (plus one per IP with CONCURRENT_REQUESTS_PER_IP), backoff on
// BACKOFF_HTTP_CODES and BACKOFF_EXCEPTIONS.
type DefaultManager struct {
	// PerIP adds the request's resolved IP as a second scope.
	PerIP bool
	// DNS is where IPs are looked up (cache only, never resolving).
	DNS   *downloader.DNSCache
	codes map[int]bool
	errs  []error
}

// GetScopes implements Manager.
func (m *DefaultManager) GetScopes(ctx context.Context, req *spider.Request) (Scopes, error) {
	host := req.Host()
	sc := Scopes{{Name: host}}
	if m.PerIP && m.DNS != nil {
		if ip, ok := m.DNS.Cached(req.URL.Hostname()); ok && ip != host {
			sc = AddScope(sc, ip, 0)
		}
	}
	return sc, nil
}

// GetResponseBackoff implements Manager.
func (m *DefaultManager) GetResponseBackoff(ctx context.Context, res *spider.Response, scopes Scopes) (Feedback, error) {
	if !m.codes[res.Status] {
		return nil, nil
	}
	fb := Feedback{}
	for _, s := range scopes {
		fb[s.Name] = ScopeFeedback{Trigger: true}
	}
	return fb, nil
}

// GetExceptionBackoff implements Manager.
func (m *DefaultManager) GetExceptionBackoff(ctx context.Context, req *spider.Request, err error, scopes Scopes) (Feedback, error) {
	for _, k := range m.errs {
		if errorsIs(err, k) {
			fb := Feedback{}
			for _, s := range scopes {
				fb[s.Name] = ScopeFeedback{Trigger: true}
			}
			return fb, nil
		}
	}
	return nil, nil
}
