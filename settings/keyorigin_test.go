package settings_test

import (
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/settings"
	_ "github.com/gocrawl/gocrawl/throttling" // registers the THROTTLING_SCOPES check
)

const scopesYAML = `DOWNLOAD_DELAY: 1
THROTTLING_SCOPES:
  api:
    concurency: 3
    delay: -1
    jitter: 7
  ok.example: {delay: 2}
  flow.example: {delay: -2, backoff: {max_delay: x, factor: 2}}
`

// KeyOrigin names the line of a key nested in a setting's YAML value, the
// longest known part of the path, or the setting's own origin.
func TestKeyOrigin(t *testing.T) {
	s := settings.New()
	if err := s.LoadYAML([]byte(scopesYAML), "gocrawl.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		path []string
		want string
	}{
		{"THROTTLING_SCOPES", []string{"api", "delay"}, "gocrawl.yaml:5"},
		{"THROTTLING_SCOPES", []string{"api", "jitter"}, "gocrawl.yaml:6"},
		{"THROTTLING_SCOPES", []string{"api"}, "gocrawl.yaml:3"},
		{"THROTTLING_SCOPES", []string{"api", "nope"}, "gocrawl.yaml:3"},
		{"THROTTLING_SCOPES", []string{"flow.example", "backoff", "max_delay"}, "gocrawl.yaml:8"},
		{"THROTTLING_SCOPES", []string{"unknown.example"}, "gocrawl.yaml:2"},
		{"DOWNLOAD_DELAY", nil, "gocrawl.yaml:1"},
		{"CONCURRENT_REQUESTS", nil, ""},
	} {
		if got := s.KeyOrigin(tt.name, tt.path...); got != tt.want {
			t.Errorf("KeyOrigin(%s, %q) = %q, want %q", tt.name, tt.path, got, tt.want)
		}
	}
	// A later layer's value has no lines of the file's.
	if err := s.Set("THROTTLING_SCOPES", map[string]any{"api": map[string]any{"delay": 1}}, settings.SourceCommandLine, "-s THROTTLING_SCOPES=..."); err != nil {
		t.Fatal(err)
	}
	if got := s.KeyOrigin("THROTTLING_SCOPES", "api", "delay"); got != "-s THROTTLING_SCOPES=..." {
		t.Errorf("after -s: KeyOrigin = %q, want the -s origin", got)
	}
	if got := s.Clone().KeyOrigin("THROTTLING_SCOPES", "api"); got != "-s THROTTLING_SCOPES=..." {
		t.Errorf("clone: KeyOrigin = %q", got)
	}
}

// Validate reports every problem of a THROTTLING_SCOPES entry, not only
// the first, each with the file and line of its key.
func TestValidateReportsEveryProblemOfAScope(t *testing.T) {
	s := settings.New()
	if err := s.LoadYAML([]byte(scopesYAML), "gocrawl.yaml"); err != nil {
		t.Fatal(err)
	}
	errs := settings.Errors(settings.Validate(s))
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{
		`gocrawl.yaml:4: invalid setting THROTTLING_SCOPES: scope "api": key "concurency": unknown key; did you mean "concurrency"?`,
		`gocrawl.yaml:5: invalid setting THROTTLING_SCOPES: scope "api": key "delay": -1 is negative`,
		`gocrawl.yaml:6: invalid setting THROTTLING_SCOPES: scope "api": key "jitter": 7 is above 1`,
		`gocrawl.yaml:8: invalid setting THROTTLING_SCOPES: scope "flow.example": key "backoff.factor": unknown key`,
		`gocrawl.yaml:8: invalid setting THROTTLING_SCOPES: scope "flow.example": key "backoff.max_delay": "x" is not a number`,
		`gocrawl.yaml:8: invalid setting THROTTLING_SCOPES: scope "flow.example": key "delay": -2 is negative`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], want[i])
		}
	}
}
