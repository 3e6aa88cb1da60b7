package throttling

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/settings"
)

// ErrInvalidConfig is the kind of every throttling configuration error:
// errors.Is(err, ErrInvalidConfig) tells a bad setting from other failures.
var ErrInvalidConfig = errors.New("invalid throttling configuration")

// ConfigError names the setting, scope and key of an invalid value.
type ConfigError struct {
	// Setting is the setting name, e.g. THROTTLING_SCOPES.
	Setting string
	// Scope is the THROTTLING_SCOPES entry, when the problem is in one.
	Scope string
	// Key is the key inside the entry ("delay", "backoff.max_delay").
	Key string
	// Msg says what is wrong and what is expected.
	Msg string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.Setting)
	if e.Scope != "" {
		fmt.Fprintf(&b, ": scope %q", e.Scope)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %q", e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// BackoffConfig is how a scope backs off: the global BACKOFF_* settings,
// overridden per scope by the "backoff" key of THROTTLING_SCOPES.
type BackoffConfig struct {
	// HTTPCodes are the response codes that trigger backoff.
	HTTPCodes []int
	// Exceptions are the download error kinds (registered names) that
	// trigger backoff.
	Exceptions []string
	// DelayFactor multiplies the delay on each step (>= 1).
	DelayFactor float64
	// MaxDelay caps backoff delays and server-announced delays.
	MaxDelay time.Duration
	// MinDelay is the delay of the first step and the floor during backoff.
	MinDelay time.Duration
	// Jitter randomizes backoff delays: delay*(1+uniform(Jitter[0], Jitter[1])).
	Jitter [2]float64
	// Window is the quiet time after which the delay drops one step; also
	// rampup's evaluation window.
	Window time.Duration
	// RetryAfterPacing spreads the scope's requests after a server delay
	// (Retry-After, RateLimit-Reset) instead of releasing its whole
	// concurrency at once (BACKOFF_RETRY_AFTER_PACING; see backoff.go).
	RetryAfterPacing bool

	errs []error
}

// Triggers reports whether status is one of the backoff codes.
func (b *BackoffConfig) Triggers(status int) bool { return slices.Contains(b.HTTPCodes, status) }

// TriggersOn reports whether err is of one of the backoff error kinds.
func (b *BackoffConfig) TriggersOn(err error) bool {
	for _, k := range b.errs {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// RampupConfig is a scope's rampup behaviour ("rampup": true or a map).
type RampupConfig struct {
	// Enabled turns rampup on.
	Enabled bool
	// Target is the [low, high] number of backoff triggers per window
	// rampup aims for (RAMPUP_BACKOFF_TARGET; an integer n means [n, n]).
	Target [2]int
	// DelayFactor multiplies the delay on each rampup step (0 < f < 1).
	DelayFactor float64
	// MinDelay is the delay rampup does not go below.
	MinDelay time.Duration
}

// RateControlConfig is a scope's rate controller (THROTTLING_RATE_CONTROL,
// THROTTLING_LATENCY_CONTROL, or the scope's "rate_control" key; see
// ratecontrol.go and latency.go).
type RateControlConfig struct {
	// Enabled turns the rate controller on: it finds and holds the rate
	// a server allows from the evidence it gives (refusals with
	// Retry-After, RateLimit headers; bare refusals with rampup) and
	// probes upward when it has been quiet.
	Enabled bool
	// Latency also holds the scope's concurrency where more requests in
	// flight stop adding throughput and only add latency.
	Latency bool
}

// DefaultRampupDelayFactor is the rampup delay_factor when unset: the
// inverse of the default BACKOFF_DELAY_FACTOR, so one quiet window undoes
// one backoff step.
const DefaultRampupDelayFactor = 0.5

// ScopeConfig is the full configuration of one scope: its THROTTLING_SCOPES
// entry merged over the defaults for its kind. Scope managers are built
// from it.
type ScopeConfig struct {
	// Name is the scope's name.
	Name string
	// Kind is the scope's kind (domain, IP, other).
	Kind ScopeKind
	// Concurrency is the maximum number of requests in flight (0 =
	// unlimited). With rampup it is the ceiling rampup grows towards; a
	// rampup scope without an explicit concurrency has none (0), whatever
	// its kind's default.
	Concurrency int
	// MinConcurrency is the floor backoff and rampup never go below (>= 1).
	MinConcurrency int
	// Delay is the minimum time between two sends.
	Delay time.Duration
	// Jitter randomizes Delay: each delay is Delay*(1+uniform(Jitter[0], Jitter[1])).
	Jitter [2]float64
	// Quota is the amount the scope's requests may consume per Window (0 = no quota).
	Quota float64
	// Window is the quota window (THROTTLING_WINDOW unless set).
	Window time.Duration
	// Rampup configures rampup.
	Rampup RampupConfig
	// Backoff configures backoff.
	Backoff BackoffConfig
	// RateControl configures the rate controller.
	RateControl RateControlConfig
	// Manager is the registered scope manager name for this scope.
	Manager string
	// IgnoreRobotsTxt silences the warning about a robots.txt Crawl-delay
	// that disagrees with this configuration.
	IgnoreRobotsTxt bool
	// ExplicitConcurrency and ExplicitDelay are true when THROTTLING_SCOPES
	// sets them (they then win over a robots.txt Crawl-delay).
	ExplicitConcurrency, ExplicitDelay bool
	// Raw is the THROTTLING_SCOPES entry as written, for custom scope
	// managers that read their own keys; nil when there is none.
	Raw map[string]any
}

// Config is the throttling configuration read from settings once, at
// start-up, and validated there.
type Config struct {
	// PerDomain, PerIP and Other are the default concurrencies by kind
	// (IP scopes use PerDomain when PerIP is 0).
	PerDomain, PerIP, Other int
	// Proxy holds the defaults of proxy scopes (proxyscope.go).
	Proxy ProxyDefaults
	// Delay is DOWNLOAD_DELAY, the default delay of domain and IP scopes.
	Delay time.Duration
	// Jitter is RANDOMIZE_DOWNLOAD_DELAY as a [low, high] factor range.
	Jitter [2]float64
	// Window is THROTTLING_WINDOW.
	Window time.Duration
	// Backoff holds the global BACKOFF_* settings.
	Backoff BackoffConfig
	// RampupTarget is RAMPUP_BACKOFF_TARGET.
	RampupTarget [2]int
	// RampupAll enables rampup on scopes that do not set "rampup"
	// (AUTOTHROTTLE_TARGET_CONCURRENCY migration).
	RampupAll bool
	// RateControl holds THROTTLING_RATE_CONTROL and
	// THROTTLING_LATENCY_CONTROL, the default of every scope.
	RateControl RateControlConfig
	// ScopeLimit is THROTTLING_SCOPE_LIMIT (0 = none).
	ScopeLimit int
	// MaxIdle is THROTTLING_SCOPE_MAX_IDLE (0 = never).
	MaxIdle time.Duration
	// Debug is THROTTLING_DEBUG (or the deprecated AUTOTHROTTLE_DEBUG).
	Debug bool
	// RobotsMaxDelay is THROTTLING_ROBOTSTXT_MAX_DELAY.
	RobotsMaxDelay time.Duration
	// RobotsObey is ROBOTSTXT_OBEY && THROTTLING_ROBOTSTXT_OBEY.
	RobotsObey bool
	// Manager and ScopeManager are THROTTLING_MANAGER and
	// THROTTLING_SCOPE_MANAGER.
	Manager, ScopeManager string
	// Warnings are deprecation notices found while reading (AUTOTHROTTLE_*).
	Warnings []string

	scopes map[string]*ScopeConfig
}

var scopeKeys = []string{"concurrency", "min_concurrency", "delay", "jitter", "quota", "window",
	"rampup", "backoff", "rate_control", "manager", "ignore_robots_txt"}

var rateControlKeys = []string{"enabled", "latency"}

var backoffKeys = []string{"http_codes", "exceptions", "delay_factor", "max_delay", "min_delay", "jitter", "window", "retry_after_pacing"}

var rampupKeys = []string{"backoff_target", "delay_factor", "min_delay"}

// ReadConfig reads and validates the throttling settings. Errors are
// *ConfigError values naming the setting, scope and key.
func ReadConfig(s *settings.Settings) (*Config, error) {
	c := &Config{
		PerDomain:      s.Int("CONCURRENT_REQUESTS_PER_DOMAIN"),
		PerIP:          s.Int("CONCURRENT_REQUESTS_PER_IP"),
		Other:          s.Int("THROTTLING_SCOPE_CONCURRENCY"),
		Proxy:          readProxyDefaults(s),
		Delay:          s.Seconds("DOWNLOAD_DELAY"),
		Window:         s.Seconds("THROTTLING_WINDOW"),
		ScopeLimit:     s.Int("THROTTLING_SCOPE_LIMIT"),
		MaxIdle:        s.Seconds("THROTTLING_SCOPE_MAX_IDLE"),
		Debug:          s.Bool("THROTTLING_DEBUG"),
		RobotsMaxDelay: s.Seconds("THROTTLING_ROBOTSTXT_MAX_DELAY"),
		RobotsObey:     s.Bool("ROBOTSTXT_OBEY") && s.Bool("THROTTLING_ROBOTSTXT_OBEY"),
		RateControl:    RateControlConfig{Enabled: s.Bool("THROTTLING_RATE_CONTROL"), Latency: s.Bool("THROTTLING_LATENCY_CONTROL")},
		Manager:        s.String("THROTTLING_MANAGER"),
		ScopeManager:   s.String("THROTTLING_SCOPE_MANAGER"),
		scopes:         map[string]*ScopeConfig{},
	}
	var err error
	if c.Jitter, err = parseJitter(s.Get("RANDOMIZE_DOWNLOAD_DELAY")); err != nil {
		return nil, &ConfigError{Setting: "RANDOMIZE_DOWNLOAD_DELAY", Msg: err.Error()}
	}
	if c.Window <= 0 {
		return nil, &ConfigError{Setting: "THROTTLING_WINDOW", Msg: "must be positive"}
	}
	b := &c.Backoff
	b.HTTPCodes = slices.Clone(s.Ints("BACKOFF_HTTP_CODES"))
	b.Exceptions = slices.Clone(s.Strings("BACKOFF_EXCEPTIONS"))
	b.DelayFactor = s.Float("BACKOFF_DELAY_FACTOR")
	b.MaxDelay = s.Seconds("BACKOFF_MAX_DELAY")
	b.MinDelay = s.Seconds("BACKOFF_MIN_DELAY")
	b.Window = s.Seconds("BACKOFF_WINDOW")
	b.RetryAfterPacing = s.Bool("BACKOFF_RETRY_AFTER_PACING")
	if b.Jitter, err = parseJitter(s.Get("BACKOFF_JITTER")); err != nil {
		return nil, &ConfigError{Setting: "BACKOFF_JITTER", Msg: err.Error()}
	}
	switch v := s.Get("RAMPUP_BACKOFF_TARGET").(type) {
	case int:
		c.RampupTarget = [2]int{v, v}
	case [2]int:
		c.RampupTarget = v
	}
	applyAutoThrottle(s, c)
	if err := b.finish("", "BACKOFF_"); err != nil {
		return nil, err
	}
	if _, err := lookupScopeManager(c.ScopeManager); err != nil {
		return nil, &ConfigError{Setting: "THROTTLING_SCOPE_MANAGER", Msg: err.Error()}
	}
	raw := s.Map("THROTTLING_SCOPES")
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		sc, err := c.parseScope(name, raw[name])
		if err != nil {
			return nil, err
		}
		c.scopes[name] = sc
	}
	return c, nil
}

// finish validates b and resolves its error kinds. scope is "" for the
// global settings, whose names start with prefix.
func (b *BackoffConfig) finish(scope, prefix string) error {
	bad := func(key, msg string) error {
		if scope == "" {
			return &ConfigError{Setting: prefix + strings.ToUpper(key), Msg: msg}
		}
		return &ConfigError{Setting: "THROTTLING_SCOPES", Scope: scope, Key: "backoff." + key, Msg: msg}
	}
	if b.DelayFactor < 1 {
		return bad("delay_factor", fmt.Sprintf("%v is below 1 (backoff must not speed a scope up)", b.DelayFactor))
	}
	if b.MinDelay > b.MaxDelay {
		return bad("min_delay", fmt.Sprintf("%v is above max_delay %v", b.MinDelay.Seconds(), b.MaxDelay.Seconds()))
	}
	if b.Window <= 0 {
		return bad("window", "must be positive")
	}
	if b.Jitter[0] < -1 {
		return bad("jitter", fmt.Sprintf("low %v is below -1", b.Jitter[0]))
	}
	for _, code := range b.HTTPCodes {
		if code < 100 || code > 999 {
			return bad("http_codes", fmt.Sprintf("%d is not an HTTP status code", code))
		}
	}
	errs, err := errkind.Resolve("exceptions", b.Exceptions)
	if err != nil {
		return bad("exceptions", strings.TrimPrefix(err.Error(), "exceptions: "))
	}
	b.errs = errs
	return nil
}

// defaults returns the configuration of a scope that THROTTLING_SCOPES
// does not mention.
func (c *Config) defaults(name string) *ScopeConfig {
	sc := &ScopeConfig{Name: name, Kind: KindOfScope(name), MinConcurrency: 1, Jitter: c.Jitter,
		Window: c.Window, Backoff: c.Backoff, Manager: c.ScopeManager, RateControl: c.RateControl,
		Rampup: RampupConfig{Enabled: c.RampupAll, Target: c.RampupTarget, DelayFactor: DefaultRampupDelayFactor}}
	switch sc.Kind {
	case KindDomain:
		sc.Concurrency, sc.Delay = c.PerDomain, c.Delay
	case KindIP:
		// With CONCURRENT_REQUESTS_PER_IP off there are no IP scopes, only
		// hosts that are IP literals (http://10.0.0.1/): those are hosts.
		sc.Concurrency, sc.Delay = c.PerIP, c.Delay
		if c.PerIP == 0 {
			sc.Concurrency = c.PerDomain
		}
	case KindProxy, KindProxyHost:
		sc.Concurrency, sc.Delay = c.Proxy.of(sc.Kind)
	default:
		sc.Concurrency = c.Other
	}
	return sc
}

// Scope returns the configuration of the named scope: its THROTTLING_SCOPES
// entry merged over the defaults for its kind. The result is a copy.
func (c *Config) Scope(name string) ScopeConfig {
	if sc, ok := c.scopes[name]; ok {
		return *sc
	}
	sc := c.defaults(name)
	if sc.Rampup.Enabled {
		sc.Concurrency = 0 // a rampup scope grows without a ceiling of its own (AUTOTHROTTLE_TARGET_CONCURRENCY)
	}
	return *sc
}

// Configured reports whether THROTTLING_SCOPES has an entry for name.
func (c *Config) Configured(name string) bool {
	_, ok := c.scopes[name]
	return ok
}

// ConfiguredScopes returns the names of the THROTTLING_SCOPES entries.
func (c *Config) ConfiguredScopes() []string { return slices.Sorted(maps.Keys(c.scopes)) }

// parseJitter reads RANDOMIZE_DOWNLOAD_DELAY, BACKOFF_JITTER and "jitter"
// values: true = ±0.5, false = none, f = ±f, [low, high].
func parseJitter(v any) ([2]float64, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return [2]float64{-0.5, 0.5}, nil
		}
		return [2]float64{}, nil
	case [2]float64:
		if x[0] < -1 {
			return x, fmt.Errorf("low %v is below -1 (delays cannot be negative)", x[0])
		}
		return x, nil
	}
	f, err := settings.OneOf(settings.NonNegative(settings.Float), settings.FloatPair).Convert(v)
	if err != nil {
		return [2]float64{}, fmt.Errorf("%v (want true, false, a factor such as 0.5, or [low, high])", err)
	}
	switch x := f.(type) {
	case float64:
		if x > 1 {
			return [2]float64{}, fmt.Errorf("%v is above 1 (delays cannot be negative)", x)
		}
		return [2]float64{-x, x}, nil
	case [2]float64:
		if x[0] < -1 {
			return x, fmt.Errorf("low %v is below -1 (delays cannot be negative)", x[0])
		}
		return x, nil
	}
	return [2]float64{}, fmt.Errorf("unexpected %T", f)
}
