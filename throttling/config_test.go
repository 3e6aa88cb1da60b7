package throttling

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
)

func TestScopesValidation(t *testing.T) {
	tests := []struct {
		name  string
		entry any
		want  []string // substrings of the error
	}{
		{"not a mapping", "fast", []string{`scope "s"`, "want a mapping"}},
		{"unknown key with suggestion", map[string]any{"concurency": 2}, []string{`scope "s"`, `key "concurency"`, `did you mean "concurrency"`}},
		{"unknown key", map[string]any{"speed": 2}, []string{`key "speed"`, "known:"}},
		{"negative concurrency", map[string]any{"concurrency": -1}, []string{`key "concurrency"`, "negative"}},
		{"min_concurrency 0", map[string]any{"min_concurrency": 0}, []string{`key "min_concurrency"`, "at least 1"}},
		{"min above concurrency", map[string]any{"concurrency": 2, "min_concurrency": 3}, []string{`key "min_concurrency"`, "above concurrency"}},
		{"delay not a number", map[string]any{"delay": "fast"}, []string{`key "delay"`, "seconds"}},
		{"negative delay", map[string]any{"delay": -1.0}, []string{`key "delay"`, "negative"}},
		{"jitter above 1", map[string]any{"jitter": 2.0}, []string{`key "jitter"`, "above 1"}},
		{"jitter pair reversed", map[string]any{"jitter": []any{0.5, 0.1}}, []string{`key "jitter"`}},
		{"negative quota", map[string]any{"quota": -5}, []string{`key "quota"`}},
		{"zero window", map[string]any{"window": 0}, []string{`key "window"`, "positive"}},
		{"rampup not bool or map", map[string]any{"rampup": "yes please"}, []string{`key "rampup"`}},
		{"rampup bad factor", map[string]any{"rampup": map[string]any{"delay_factor": 1.5}}, []string{`key "rampup.delay_factor"`, "between 0 and 1"}},
		{"rampup bad target", map[string]any{"rampup": map[string]any{"backoff_target": []any{3, 1}}}, []string{`key "rampup.backoff_target"`}},
		{"rampup unknown key", map[string]any{"rampup": map[string]any{"speed": 1}}, []string{`key "rampup.speed"`}},
		{"backoff not a map", map[string]any{"backoff": 3}, []string{`key "backoff"`}},
		{"backoff factor below 1", map[string]any{"backoff": map[string]any{"delay_factor": 0.5}}, []string{`key "backoff.delay_factor"`, "below 1"}},
		{"backoff min above max", map[string]any{"backoff": map[string]any{"min_delay": 10, "max_delay": 5}}, []string{`key "backoff.min_delay"`}},
		{"backoff bad code", map[string]any{"backoff": map[string]any{"http_codes": []any{42}}}, []string{`key "backoff.http_codes"`, "42"}},
		{"backoff unknown exception", map[string]any{"backoff": map[string]any{"exceptions": []any{"builtins.IOError"}}}, []string{`key "backoff.exceptions"`, "builtins.IOError", "errkind.Register"}},
		{"backoff unknown key", map[string]any{"backoff": map[string]any{"factor": 2}}, []string{`key "backoff.factor"`}},
		{"unknown manager", map[string]any{"manager": "NoSuchManager"}, []string{`key "manager"`, "NoSuchManager", "registered"}},
		{"ignore_robots_txt not bool", map[string]any{"ignore_robots_txt": "maybe"}, []string{`key "ignore_robots_txt"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(testSettings(t, "THROTTLING_SCOPES", map[string]any{"s": tt.entry}), Options{Clock: clock.NewFake(t0)})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v is not ErrInvalidConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestGlobalSettingsValidation(t *testing.T) {
	tests := []struct {
		kv   []any
		want string
	}{
		{[]any{"BACKOFF_DELAY_FACTOR", 0.5}, "BACKOFF_DELAY_FACTOR"},
		{[]any{"BACKOFF_MIN_DELAY", 500.0}, "BACKOFF_MIN_DELAY"},
		{[]any{"BACKOFF_EXCEPTIONS", []any{"NoSuchError"}}, "BACKOFF_EXCEPTIONS"},
		{[]any{"BACKOFF_WINDOW", 0.0}, "BACKOFF_WINDOW"},
		{[]any{"THROTTLING_WINDOW", 0.0}, "THROTTLING_WINDOW"},
		{[]any{"THROTTLING_MANAGER", "Nope"}, "THROTTLING_MANAGER"},
		{[]any{"THROTTLING_SCOPE_MANAGER", "Nope"}, "THROTTLING_SCOPE_MANAGER"},
		{[]any{"RANDOMIZE_DOWNLOAD_DELAY", 3.0}, "RANDOMIZE_DOWNLOAD_DELAY"},
	}
	for _, tt := range tests {
		_, err := New(testSettings(t, tt.kv...), Options{Clock: clock.NewFake(t0)})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v: error %v, want one starting with %s", tt.kv, err, tt.want)
		}
	}
}

func TestScopeDefaultsByKind(t *testing.T) {
	cfg, err := ReadConfig(testSettings(t, "CONCURRENT_REQUESTS_PER_DOMAIN", 5, "CONCURRENT_REQUESTS_PER_IP", 3,
		"THROTTLING_SCOPE_CONCURRENCY", 2, "DOWNLOAD_DELAY", 1.5,
		"THROTTLING_SCOPES", map[string]any{"api": map[string]any{"concurrency": 9, "delay": 0.5}}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scope string
		conc  int
		delay float64
	}{
		{"books.toscrape.com", 5, 1.5},
		{"127.0.0.1:8080", 5, 1.5}, // a URL's host, not an IP scope
		{"[::1]:8080", 5, 1.5},
		{"10.0.0.1", 3, 1.5},
		{"::1", 3, 1.5},
		{"localhost:9000", 5, 1.5},
		{"users", 2, 0},
		{"api.toscrape.com/fast-endpoint", 2, 0},
		{"api", 9, 0.5},
	}
	for _, tt := range tests {
		sc := cfg.Scope(tt.scope)
		if sc.Concurrency != tt.conc || sc.Delay.Seconds() != tt.delay {
			t.Errorf("%s: concurrency %d delay %v, want %d and %v", tt.scope, sc.Concurrency, sc.Delay.Seconds(), tt.conc, tt.delay)
		}
	}
}

// No scope is configured by default: a project's DOWNLOAD_DELAY and
// CONCURRENT_REQUESTS_PER_DOMAIN apply to every site, the tutorial's
// quotes.toscrape.com included.
func TestDefaultThrottlingScopes(t *testing.T) {
	s := testSettings(t)
	if err := s.Set("DOWNLOAD_DELAY", 1.5, settings.SourceFile, "gocrawl.yaml:1"); err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ConfiguredScopes(); len(got) != 0 {
		t.Errorf("default THROTTLING_SCOPES configures %v, want none", got)
	}
	if sc := cfg.Scope("quotes.toscrape.com"); sc.Delay != 1500*time.Millisecond || sc.ExplicitConcurrency {
		t.Errorf("quotes.toscrape.com = %+v, want DOWNLOAD_DELAY 1.5s and the default concurrency", sc)
	}
}

func TestAutoThrottleMigration(t *testing.T) {
	th, _ := newTestThrottler(t, "AUTOTHROTTLE_ENABLED", true, "AUTOTHROTTLE_START_DELAY", 3.0,
		"AUTOTHROTTLE_MAX_DELAY", 30.0, "AUTOTHROTTLE_TARGET_CONCURRENCY", 2.0, "AUTOTHROTTLE_DEBUG", true)
	c := th.Config()
	if c.Delay != 3*sec || c.Backoff.MaxDelay != 30*sec || !c.RampupAll || !c.Debug {
		t.Fatalf("mapped config: delay %v max %v rampup %v debug %v", c.Delay, c.Backoff.MaxDelay, c.RampupAll, c.Debug)
	}
	if len(c.Warnings) != 5 {
		t.Fatalf("%d deprecation warnings, want 5: %q", len(c.Warnings), c.Warnings)
	}
	if !c.Scope("example.com").Rampup.Enabled {
		t.Error("AUTOTHROTTLE_TARGET_CONCURRENCY did not enable rampup")
	}
	// Explicit throttling settings win.
	th, _ = newTestThrottler(t, "AUTOTHROTTLE_START_DELAY", 3.0, "DOWNLOAD_DELAY", 0.5)
	if th.Config().Delay != sec/2 {
		t.Errorf("DOWNLOAD_DELAY set explicitly lost to AUTOTHROTTLE_START_DELAY")
	}
	// Nothing set: no warnings.
	th, _ = newTestThrottler(t)
	if len(th.Config().Warnings) != 0 {
		t.Errorf("warnings without AUTOTHROTTLE settings: %q", th.Config().Warnings)
	}
}
