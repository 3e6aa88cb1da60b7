package simsite

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestValidateNamesBadFields(t *testing.T) {
	host := func(mod func(*HostConfig)) Config {
		h := HostConfig{Name: "h"}
		mod(&h)
		return Config{Hosts: []HostConfig{h}}
	}
	tests := []struct {
		name  string
		cfg   Config
		field string // "" means valid
	}{
		{"zero host is valid", host(func(h *HostConfig) {}), ""},
		{"demo config is valid", DefaultDemoConfig(), ""},
		{"no hosts", Config{}, "hosts"},
		{"missing name", Config{Hosts: []HostConfig{{}}}, "hosts[0].name"},
		{"bad name", host(func(h *HostConfig) { h.Name = "a b" }), "hosts[0].name"},
		{"duplicate name", Config{Hosts: []HostConfig{{Name: "A"}, {Name: "a"}}}, "hosts[1].name"},
		{"port", host(func(h *HostConfig) { h.Port = 70000 }), "hosts[0].port"},
		{"max records", Config{MaxRecords: -1, Hosts: []HostConfig{{Name: "a"}}}, "max_records"},
		{"shared port", Config{SharedPort: -1, Hosts: []HostConfig{{Name: "a"}}}, "shared_port"},
		{"page count", host(func(h *HostConfig) { h.Pages.Count = -1 }), "hosts[0].pages.count"},
		{"graph", host(func(h *HostConfig) { h.Pages.Graph = "mesh" }), "hosts[0].pages.graph"},
		{"links", host(func(h *HostConfig) { h.Pages.Links = "weird" }), "hosts[0].pages.links"},
		{"latency kind", host(func(h *HostConfig) { h.Latency.Kind = "pareto" }), "hosts[0].latency.kind"},
		{"uniform max < min", host(func(h *HostConfig) { h.Latency = LatencyConfig{Kind: LatencyUniform, Min: 2, Max: 1} }), "hosts[0].latency.max"},
		{"normal needs mean", host(func(h *HostConfig) { h.Latency.Kind = LatencyNormal }), "hosts[0].latency.mean"},
		{"negative latency", host(func(h *HostConfig) { h.Latency.Fixed = -time.Second }), "hosts[0].latency.fixed"},
		{"limit key", host(func(h *HostConfig) { h.Limit.Key = "cookie" }), "hosts[0].limit.key"},
		{"negative rate", host(func(h *HostConfig) { h.Limit.Rate = -1 }), "hosts[0].limit.rate"},
		{"burst without rate", host(func(h *HostConfig) { h.Limit.Burst = 3 }), "hosts[0].limit.burst"},
		{"window without limit", host(func(h *HostConfig) { h.Limit.Window = time.Second }), "hosts[0].limit.window"},
		{"limit status", host(func(h *HostConfig) { h.Limit.Status = 403 }), "hosts[0].limit.status"},
		{"retry-after format", host(func(h *HostConfig) { h.Limit.RetryAfter = "minutes" }), "hosts[0].limit.retry_after"},
		{"robots status", host(func(h *HostConfig) { h.Robots.Status = 999 }), "hosts[0].robots.status"},
		{"robots disallow", host(func(h *HostConfig) { h.Robots.Disallow = []string{"page"} }), "hosts[0].robots.disallow[0]"},
		{"robots allow", host(func(h *HostConfig) { h.Robots.Allow = []string{"x"} }), "hosts[0].robots.allow[0]"},
		{"fault kind", host(func(h *HostConfig) { h.Faults = []FaultConfig{{Kind: "explode", Probability: 1}} }), "hosts[0].faults[0].kind"},
		{"fault probability", host(func(h *HostConfig) { h.Faults = []FaultConfig{{Kind: FaultReset, Probability: 2}} }), "hosts[0].faults[0].probability"},
		{"fault never fires", host(func(h *HostConfig) { h.Faults = []FaultConfig{{Kind: FaultReset}} }), "hosts[0].faults[0].probability"},
		{"fault prefix", host(func(h *HostConfig) { h.Faults = []FaultConfig{{Kind: FaultReset, PathPrefix: "page"}} }), "hosts[0].faults[0].path_prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want an ErrInvalidConfig", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("Validate() = %v, want first field %q", err, tt.field)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	err := Config{Hosts: []HostConfig{{Name: "x", Pages: PagesConfig{Count: -1}, Limit: LimitConfig{Rate: -1}}}}.Validate()
	for _, want := range []string{"hosts[0].pages.count = -1: must be >= 0", "hosts[0].limit.rate = -1: must be >= 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestLoadConfigFile(t *testing.T) {
	cfg, err := LoadConfigFile(filepath.Join("testdata", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Shared || len(cfg.Hosts) != 2 {
		t.Fatalf("cfg = %+v", cfg)
	}
	strict := cfg.Hosts[1]
	want := LimitConfig{Rate: 10, Burst: 5, Status: 429, RetryAfter: RetryAfterHTTPDate, RateLimitHeaders: true}
	if !reflect.DeepEqual(strict.Limit, want) {
		t.Errorf("strict limit = %+v, want %+v", strict.Limit, want)
	}
	if strict.Latency != (LatencyConfig{Kind: LatencyExponential, Mean: 10 * time.Millisecond, Max: 200 * time.Millisecond}) {
		t.Errorf("strict latency = %+v", strict.Latency)
	}
	if strict.Robots.CrawlDelay != 500*time.Millisecond || strict.Robots.Disallow[0] != "/page/4" {
		t.Errorf("strict robots = %+v", strict.Robots)
	}
	if len(strict.Faults) != 2 || strict.Faults[1] != (FaultConfig{Kind: FaultEndless, PathPrefix: "/page/13"}) {
		t.Errorf("strict faults = %+v", strict.Faults)
	}
	s := startT(t, cfg)
	if r, body := get(t, s.URL("strict")+"/robots.txt"); r.StatusCode != 200 || !strings.Contains(body, "Crawl-delay: 0.5") {
		t.Errorf("robots.txt: %d %q", r.StatusCode, body)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "hosts:\n  - name: a\n    pagez: {count: 3}\n", "pagez"},
		{"bad duration", "hosts:\n  - name: a\n    latency: {kind: fixed, fixed: soon}\n", "soon"},
		{"invalid value", "hosts:\n  - name: a\n    limit: {status: 418}\n", "hosts[0].limit.status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(strings.NewReader(tt.yaml))
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadConfig error = %v, want ErrInvalidConfig mentioning %q", err, tt.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "missing.yaml")
	if _, err := LoadConfigFile(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestDefaultDemoConfigServes(t *testing.T) {
	cfg := DefaultDemoConfig()
	cfg.Now = newFakeClock().Now // the strict host's bucket does not refill
	s := startT(t, cfg)
	want := map[string]struct {
		robots string
		pages  int
	}{
		"lenient": {"", 500},
		"strict":  {"User-agent: *\nDisallow:\n", 500},
		"polite":  {"User-agent: *\nCrawl-delay: 1\nDisallow: /page/4\n", 50},
	}
	for name, w := range want {
		if g := s.Graph(name); g == nil || g.Len() != w.pages {
			t.Errorf("%s: graph %v, want %d pages", name, g, w.pages)
		}
		r, body := get(t, s.URL(name)+"/robots.txt")
		if w.robots == "" && r.StatusCode != http.StatusNotFound || w.robots != "" && body != w.robots {
			t.Errorf("%s robots.txt: %d %q, want %q", name, r.StatusCode, body, w.robots)
		}
	}
	// The strict host's burst is 5: the 6th immediate request is limited.
	var statuses []int
	for i := range 6 {
		r, _ := get(t, s.URL("strict")+PagePath(i))
		statuses = append(statuses, r.StatusCode)
	}
	// robots.txt took one token already.
	if statuses[3] != 200 || statuses[4] != http.StatusTooManyRequests || statuses[5] != http.StatusTooManyRequests {
		t.Errorf("strict statuses = %v, want 200s then 429 (burst 5)", statuses)
	}
}
