package settings

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, DefaultFile, "DOWNLOAD_DELAY: 1\nCONCURRENT_REQUESTS: 4\nUSER_AGENT: file-agent\nLOG_LEVEL: DEBUG\n")
	tests := []struct {
		name       string
		opts       LoadOptions
		setting    string
		want       any
		wantSource Source
		wantOrigin string
	}{
		{"default", LoadOptions{Dir: t.TempDir()}, "DOWNLOAD_DELAY", 0.0, SourceDefault, ""},
		{"file", LoadOptions{Dir: dir}, "DOWNLOAD_DELAY", 1.0, SourceFile, filepath.Join(dir, DefaultFile) + ":1"},
		{"spider over file", LoadOptions{Dir: dir, Spider: map[string]any{"DOWNLOAD_DELAY": 2}, SpiderName: "q"},
			"DOWNLOAD_DELAY", 2.0, SourceSpider, "spider q"},
		{"env over spider", LoadOptions{Dir: dir, Spider: map[string]any{"DOWNLOAD_DELAY": 2},
			Environ: []string{"GOCRAWL_DOWNLOAD_DELAY=3", "HOME=/root"}}, "DOWNLOAD_DELAY", 3.0, SourceEnv, "GOCRAWL_DOWNLOAD_DELAY"},
		{"command line over env", LoadOptions{Dir: dir, Environ: []string{"GOCRAWL_DOWNLOAD_DELAY=3"},
			Overrides: []string{"DOWNLOAD_DELAY=4"}}, "DOWNLOAD_DELAY", 4.0, SourceCommandLine, "-s DOWNLOAD_DELAY=4"},
		{"last -s wins", LoadOptions{Overrides: []string{"CONCURRENT_REQUESTS=5", "CONCURRENT_REQUESTS=6"}, NoFile: true},
			"CONCURRENT_REQUESTS", 6, SourceCommandLine, "-s CONCURRENT_REQUESTS=6"},
		{"file line", LoadOptions{Dir: dir}, "USER_AGENT", "file-agent", SourceFile, filepath.Join(dir, DefaultFile) + ":3"},
		{"NoFile skips the file", LoadOptions{Dir: dir, NoFile: true}, "CONCURRENT_REQUESTS", 16, SourceDefault, ""},
		{"-s mapping as YAML flow", LoadOptions{NoFile: true, Overrides: []string{`THROTTLING_SCOPES={"a.com": {"delay": 2}}`}},
			"THROTTLING_SCOPES", map[string]any{"a.com": map[string]any{"delay": uint64(2)}}, SourceCommandLine, `-s THROTTLING_SCOPES={"a.com": {"delay": 2}}`},
		{"-s list", LoadOptions{NoFile: true, Overrides: []string{"BACKOFF_HTTP_CODES=[429, 503]"}},
			"BACKOFF_HTTP_CODES", []int{429, 503}, SourceCommandLine, "-s BACKOFF_HTTP_CODES=[429, 503]"},
		{"env string that looks like a number", LoadOptions{NoFile: true, Environ: []string{"GOCRAWL_USER_AGENT=123"}},
			"USER_AGENT", "123", SourceEnv, "GOCRAWL_USER_AGENT"},
		{"-s string with colon", LoadOptions{NoFile: true, Overrides: []string{"USER_AGENT=bot: v1"}},
			"USER_AGENT", "bot: v1", SourceCommandLine, "-s USER_AGENT=bot: v1"},
		{"-s bool", LoadOptions{NoFile: true, Overrides: []string{"ROBOTSTXT_OBEY=false"}},
			"ROBOTSTXT_OBEY", false, SourceCommandLine, "-s ROBOTSTXT_OBEY=false"},
		{"ignored env var", LoadOptions{NoFile: true, Environ: []string{"GOCRAWL_HOME=/x"}, EnvIgnore: []string{"GOCRAWL_HOME"}},
			"DOWNLOAD_DELAY", 0.0, SourceDefault, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load(tt.opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			v, ok := s.Origin(tt.setting)
			if !ok {
				t.Fatalf("%s not set", tt.setting)
			}
			if !reflect.DeepEqual(v.V, tt.want) {
				t.Errorf("%s = %#v, want %#v", tt.setting, v.V, tt.want)
			}
			if v.Source != tt.wantSource || v.Origin != tt.wantOrigin {
				t.Errorf("%s from %v %q, want %v %q", tt.setting, v.Source, v.Origin, tt.wantSource, tt.wantOrigin)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", "# comment\nCONCURRENT_REQUESTS: 4\n\nDOWNLOAD_DELAY: x\nDOWNLOD_TIMEOUT: 3\n")
	syntax := writeFile(t, dir, "syntax.yaml", "DOWNLOAD_DELAY: 1\n  CONCURRENT_REQUESTS: [4\n")
	list := writeFile(t, dir, "list.yaml", "- DOWNLOAD_DELAY\n")
	tests := []struct {
		name string
		opts LoadOptions
		// want lists substrings; each must appear in one of the errors, in order.
		want []string
		kind error
	}{
		{"type error with file and line", LoadOptions{File: bad},
			[]string{bad + `:4: invalid value DOWNLOAD_DELAY: "x" is not a number (expected non-negative number, got string "x")`,
				bad + ":5: unknown setting DOWNLOD_TIMEOUT: did you mean DOWNLOAD_TIMEOUT?"}, ErrType},
		{"missing explicit file", LoadOptions{File: filepath.Join(dir, "nope.yaml")},
			[]string{"nope.yaml: cannot read settings file: the file does not exist"}, ErrFile},
		{"yaml syntax", LoadOptions{File: syntax}, []string{syntax + ":"}, ErrSyntax},
		{"top level not a mapping", LoadOptions{File: list}, []string{list + ":1: invalid syntax: the top level must be a mapping"}, ErrSyntax},
		{"unknown env var", LoadOptions{NoFile: true, Environ: []string{"GOCRAWL_DOWNLOAD_DELEY=1"}},
			[]string{"GOCRAWL_DOWNLOAD_DELEY: unknown setting DOWNLOAD_DELEY: did you mean DOWNLOAD_DELAY?"}, ErrUnknown},
		{"env var one letter off", LoadOptions{NoFile: true, Environ: []string{"GOCRAWL_LOG_LEVL=DEBUG"}},
			[]string{"GOCRAWL_LOG_LEVL: unknown setting LOG_LEVL: did you mean LOG_LEVEL? (set GOCRAWL_LOG_LEVEL)"}, ErrUnknown},
		{"env type error", LoadOptions{NoFile: true, Environ: []string{"GOCRAWL_CONCURRENT_REQUESTS=many"}},
			[]string{`GOCRAWL_CONCURRENT_REQUESTS: invalid value CONCURRENT_REQUESTS: "many" is not an integer (expected non-negative integer, got string "many")`}, ErrType},
		{"-s without =", LoadOptions{NoFile: true, Overrides: []string{"DOWNLOAD_DELAY"}},
			[]string{"-s DOWNLOAD_DELAY: invalid syntax: expected NAME=VALUE"}, ErrSyntax},
		{"-s negative", LoadOptions{NoFile: true, Overrides: []string{"DOWNLOAD_DELAY=-1"}},
			[]string{"-s DOWNLOAD_DELAY=-1: invalid value DOWNLOAD_DELAY: -1 is negative"}, ErrType},
		{"-s broken mapping", LoadOptions{NoFile: true, Overrides: []string{`THROTTLING_SCOPES={"a.com": {`}},
			[]string{"invalid syntax THROTTLING_SCOPES: value is not valid YAML"}, ErrSyntax},
		{"-s unknown with suggestion", LoadOptions{NoFile: true, Overrides: []string{"CONCURENT_REQUESTS=2"}},
			[]string{"unknown setting CONCURENT_REQUESTS: did you mean CONCURRENT_REQUESTS?"}, ErrUnknown},
		{"all errors collected", LoadOptions{File: bad, Environ: []string{"GOCRAWL_NOPE_NOPE_NOPE=1", "GOCRAWL_DOWNLOAD_DELAX=1"},
			Overrides: []string{"LOG_LEVL=DEBUG", "LOG_LEVEL=LOUD"}},
			[]string{"DOWNLOAD_DELAY", "DOWNLOD_TIMEOUT", "GOCRAWL_DOWNLOAD_DELAX", "did you mean LOG_LEVEL?", `"LOUD" is not a log level`}, ErrUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load(tt.opts)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if s == nil {
				t.Fatal("Load returned nil settings with its error")
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.kind)
			}
			errs := Errors(err)
			if len(errs) < len(tt.want) {
				t.Fatalf("got %d errors %q, want at least %d", len(errs), err, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestLoadKeepsValidValuesWithErrors(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "s.yaml", "CONCURRENT_REQUESTS: 4\nDOWNLOAD_DELAY: x\n")
	s, err := Load(LoadOptions{File: f})
	if err == nil {
		t.Fatal("want an error")
	}
	if got := s.Int("CONCURRENT_REQUESTS"); got != 4 {
		t.Errorf("CONCURRENT_REQUESTS = %d, want 4", got)
	}
}

func TestLoadEmptyAndCommentOnlyFiles(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"", "# nothing here\n", "---\n"} {
		f := writeFile(t, dir, "empty.yaml", content)
		if _, err := Load(LoadOptions{File: f}); err != nil {
			t.Errorf("file %q: %v", content, err)
		}
	}
}

func TestLoadYAMLComplexValues(t *testing.T) {
	s := New()
	err := s.LoadYAML([]byte(`
THROTTLING_SCOPES:
  example.com:
    delay: 2
    concurrency: 1
RANDOMIZE_DOWNLOAD_DELAY: [0.1, 0.5]
FEED_EXPORT_FIELDS: [url, title]
`), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Get("RANDOMIZE_DOWNLOAD_DELAY"); got != [2]float64{0.1, 0.5} {
		t.Errorf("RANDOMIZE_DOWNLOAD_DELAY = %v", got)
	}
	if got := s.Strings("FEED_EXPORT_FIELDS"); !reflect.DeepEqual(got, []string{"url", "title"}) {
		t.Errorf("FEED_EXPORT_FIELDS = %v", got)
	}
	sc := s.Map("THROTTLING_SCOPES")["example.com"].(map[string]any)
	if len(sc) != 2 {
		t.Errorf("scope config = %v", sc)
	}
	v, _ := s.Origin("FEED_EXPORT_FIELDS")
	if v.Origin != "g.yaml:7" {
		t.Errorf("origin = %q, want g.yaml:7", v.Origin)
	}
}

func TestEntries(t *testing.T) {
	s, err := Load(LoadOptions{NoFile: true, Overrides: []string{"DOWNLOAD_DELAY=2"}})
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(Names()) {
		t.Errorf("%d entries for %d settings", len(all), len(Names()))
	}
	es, err := s.Entries("DOWNLOAD_DELAY", "LOG_LEVEL")
	if err != nil {
		t.Fatal(err)
	}
	if es[0].Name != "DOWNLOAD_DELAY" || es[0].Value != 2.0 || es[0].Source != "command line" || es[0].Origin != "-s DOWNLOAD_DELAY=2" || es[0].Default != 0.0 {
		t.Errorf("entry = %+v", es[0])
	}
	if es[1].Source != "default" || es[1].Type != "log level" || es[1].Doc == "" {
		t.Errorf("entry = %+v", es[1])
	}
	if _, err := s.Entries("DOWNLOAD_DELAI", "NOPE_NOPE_NOPE_NOPE"); err == nil || !strings.Contains(err.Error(), "did you mean DOWNLOAD_DELAY?") || len(Errors(err)) != 2 {
		t.Errorf("unknown names: err = %v", err)
	}
}

func TestDeprecated(t *testing.T) {
	s, err := Load(LoadOptions{NoFile: true, Overrides: []string{"AUTOTHROTTLE_ENABLED=true"}})
	if err != nil {
		t.Fatal(err)
	}
	d := s.Deprecated()
	if len(d) != 1 || !strings.Contains(d[0], "AUTOTHROTTLE_ENABLED (set in -s AUTOTHROTTLE_ENABLED=true) is deprecated") {
		t.Errorf("Deprecated() = %q", d)
	}
	if d := New().Deprecated(); len(d) != 0 {
		t.Errorf("defaults report deprecations: %q", d)
	}
}

// A GOCRAWL_ variable that names no setting and is not a near miss of one
// is a warning, not an error: shells and CI set such variables.
func TestEnvUnknownVariables(t *testing.T) {
	tests := []struct {
		env      string
		wantErr  string // "" = no error
		wantWarn string // "" = no warning
	}{
		{"GOCRAWL_BIN=/usr/local/bin/gocrawl", "", "ignoring environment variable GOCRAWL_BIN: BIN is not a setting"},
		{"GOCRAWL_HOME=/x", "", "GOCRAWL_HOME"},
		{"GOCRAWL_ZZZZZZZZZZZZ=1", "", "GOCRAWL_ZZZZZZZZZZZZ"},
		{"GOCRAWL_DIR=1", "", "GOCRAWL_DIR"},                       // too short to be a typo of JOBDIR
		{"GOCRAWL_JOB=nightly", "", ""},                            // a setting: a distributed job's name
		{"GOCRAWL_download_delay=1", "", "GOCRAWL_download_delay"}, // not upper case
		{"GOCRAWL_DOWLOAD_DELAY=1", "did you mean DOWNLOAD_DELAY?", ""},
		{"GOCRAWL_CONCURRENT_REQUEST=1", "did you mean CONCURRENT_REQUESTS?", ""},
		{"GOCRAWL_JOBDIRR=x", "did you mean JOBDIR?", ""},
		{"GOCRAWL_DOWNLOAD_DELAY=1", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			s, err := Load(LoadOptions{NoFile: true, Environ: []string{tt.env}})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Load: %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrUnknown)):
				t.Errorf("Load: %v, want an ErrUnknown containing %q", err, tt.wantErr)
			}
			w := strings.Join(s.Warnings(), "\n")
			if (tt.wantWarn == "") != (w == "") || !strings.Contains(w, tt.wantWarn) {
				t.Errorf("warnings %q, want %q", w, tt.wantWarn)
			}
		})
	}
}
