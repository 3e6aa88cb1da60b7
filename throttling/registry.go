package throttling

import (
	"fmt"
	"math/rand/v2"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/downloader/dnscache"
	"github.com/gocrawl/gocrawl/internal/registry"
	"github.com/gocrawl/gocrawl/settings"
)

// ScopeEnv is what a scope manager is built from.
type ScopeEnv struct {
	// Config is the scope's configuration (THROTTLING_SCOPES over the
	// defaults for its kind); Config.Raw holds the entry as written, for
	// custom keys.
	Config ScopeConfig
	// Rand is the source of jitter. The throttler serialises calls to scope
	// managers, so it needs no locking.
	Rand *rand.Rand
	// Debug receives THROTTLING_DEBUG decision lines; it is disabled
	// (zerolog.Nop) unless THROTTLING_DEBUG is on.
	Debug zerolog.Logger
}

// ScopeManagerFactory builds the manager of one scope. It is called when a
// scope is first needed (and again after the scope was evicted), and once
// per THROTTLING_SCOPES entry at start-up so that configuration errors
// surface before the crawl.
type ScopeManagerFactory func(env ScopeEnv) (ScopeManager, error)

// ManagerDeps is what a throttling manager is built from.
type ManagerDeps struct {
	// Settings are the crawl's settings.
	Settings *settings.Settings
	// Config is the parsed throttling configuration.
	Config *Config
	// Log is the crawl's logger.
	Log zerolog.Logger
	// DNS is the downloader's DNS cache (IP scopes); may be nil.
	DNS *dnscache.Cache
	// Clock is the crawl's clock.
	Clock clock.Clock
}

// Default returns the default manager for these dependencies, to embed in
// a custom manager.
func (d ManagerDeps) Default() *DefaultManager {
	m := NewDefaultManager(d.Config, d.DNS)
	m.Clock = d.Clock
	return m
}

// ManagerFactory builds a throttling manager for THROTTLING_MANAGER.
type ManagerFactory func(d ManagerDeps) (Manager, error)

var (
	scopeManagers registry.Registry[ScopeManagerFactory]
	managers      registry.Registry[ManagerFactory]
)

// The names of the built-in managers.
const (
	// DefaultManagerName is the default THROTTLING_MANAGER: one scope per
	// host (and per IP with CONCURRENT_REQUESTS_PER_IP).
	DefaultManagerName = "ThrottlingManager"
	// RegistrableDomainManagerName groups every subdomain of a registrable
	// domain (books.toscrape.com, toscrape.com -> toscrape.com).
	RegistrableDomainManagerName = "RegistrableDomainManager"
	// DefaultScopeManagerName is the default THROTTLING_SCOPE_MANAGER.
	DefaultScopeManagerName = "ThrottlingScopeManager"
)

func init() {
	RegisterScopeManager(DefaultScopeManagerName, func(env ScopeEnv) (ScopeManager, error) {
		return NewThrottlingScopeManager(env), nil
	})
	RegisterManager(DefaultManagerName, func(d ManagerDeps) (Manager, error) {
		return d.Default(), nil
	})
	RegisterManager(RegistrableDomainManagerName, func(d ManagerDeps) (Manager, error) {
		return &RegistrableDomainManager{DefaultManager: d.Default()}, nil
	})
}

// RegisterScopeManager makes a scope manager available by name to
// THROTTLING_SCOPE_MANAGER and to the "manager" key of THROTTLING_SCOPES.
// Call it from an init function; registering a name again replaces it.
func RegisterScopeManager(name string, f ScopeManagerFactory) {
	scopeManagers.Register(name, f)
}

// RegisterManager makes a throttling manager available by name to
// THROTTLING_MANAGER. Call it from an init function; registering a name
// again replaces it.
func RegisterManager(name string, f ManagerFactory) {
	managers.Register(name, f)
}

func lookupScopeManager(name string) (ScopeManagerFactory, error) {
	if f, ok := scopeManagers.Lookup(name); ok {
		return f, nil
	}
	return nil, fmt.Errorf("unknown scope manager %q (registered: %v; register others with throttling.RegisterScopeManager)",
		name, scopeManagers.Names())
}

func lookupManager(name string) (ManagerFactory, error) {
	if f, ok := managers.Lookup(name); ok {
		return f, nil
	}
	return nil, fmt.Errorf("unknown throttling manager %q (registered: %v; register others with throttling.RegisterManager)",
		name, managers.Names())
}
