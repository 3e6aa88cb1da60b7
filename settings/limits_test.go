package settings

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// The classic "billion laughs": nine aliases per level, nine levels.
const aliasBomb = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

func TestAliasBombRefused(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		dir := t.TempDir()
		p := writeFile(t, dir, "bomb.yaml", "DOWNLOAD_DELAY: 1\nITEM_PIPELINES:\n  x: 1\nFEEDS:\n"+indent(aliasBomb))
		_, err := Load(LoadOptions{File: p})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrAliasBudget) || !errors.Is(err, ErrSyntax) {
			t.Fatalf("err = %v, want ErrAliasBudget (and ErrSyntax)", err)
		}
		// The budget is crossed on the line of "f" (9^5 > 10,000), line 9 of
		// the file (four lines of header before "a").
		if !strings.Contains(err.Error(), "bomb.yaml:9:") {
			t.Errorf("err = %v, want the file and line of the alias that crossed the budget", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("loading an alias bomb did not return within 20s")
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestAliasBudgetValuesAndEnv(t *testing.T) {
	flow := "{a: &a [1,1,1,1,1,1,1,1,1,1], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]}"
	tests := []struct {
		name string
		opts LoadOptions
	}{
		{"-s mapping", LoadOptions{NoFile: true, Overrides: []string{"THROTTLING_SCOPES=" + flow}}},
		{"-s string setting", LoadOptions{NoFile: true, Overrides: []string{"USER_AGENT=" + flow}}},
		{"env", LoadOptions{NoFile: true, Environ: []string{"GOCRAWL_FEEDS=" + flow}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.opts)
			if !errors.Is(err, ErrAliasBudget) {
				t.Fatalf("err = %v, want ErrAliasBudget", err)
			}
		})
	}
}

func TestAliasesWithinBudgetWork(t *testing.T) {
	s := New()
	err := s.LoadYAML([]byte(`
THROTTLING_SCOPES:
  a.com: &slow {delay: 2, concurrency: 1}
  b.com: *slow
  c.com:
    <<: *slow
    delay: 3
`), "ok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Map("THROTTLING_SCOPES")
	if len(m) != 3 {
		t.Fatalf("THROTTLING_SCOPES = %v", m)
	}
}

func TestDeepNestingRefused(t *testing.T) {
	deep := "FEEDS: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "\n"
	err := New().LoadYAML([]byte(deep), "deep.yaml")
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "nest") {
		t.Fatalf("err = %v, want a syntax error about nesting", err)
	}
}

func TestNonFiniteNumbersRefused(t *testing.T) {
	for _, v := range []string{".inf", "-.inf", ".nan", ".Inf", "1e400", "-1e400"} {
		for _, name := range []string{"DOWNLOAD_DELAY", "DOWNLOAD_TIMEOUT", "MAX_STARTS_PER_SECOND", "CLOSESPIDER_TIMEOUT"} {
			_, err := Load(LoadOptions{NoFile: true, Overrides: []string{name + "=" + v}})
			if err == nil {
				t.Errorf("-s %s=%s accepted", name, v)
			}
		}
		if _, err := Load(LoadOptions{NoFile: true, Environ: []string{"GOCRAWL_DOWNLOAD_DELAY=" + v}}); err == nil {
			t.Errorf("GOCRAWL_DOWNLOAD_DELAY=%s accepted", v)
		}
		if err := New().LoadYAML([]byte("DOWNLOAD_TIMEOUT: "+v+"\n"), "f.yaml"); err == nil {
			t.Errorf("file DOWNLOAD_TIMEOUT: %s accepted", v)
		}
	}
	if err := New().Set("AUTOTHROTTLE_START_DELAY", math.Inf(1), SourceSpider, "spider"); err == nil {
		t.Error("a spider's +Inf accepted")
	}
	if err := New().LoadYAML([]byte("CONCURRENT_REQUESTS: 1.0e+300\n"), "f.yaml"); err == nil ||
		!strings.Contains(err.Error(), "too large") {
		t.Errorf("CONCURRENT_REQUESTS: 1.0e+300: err = %v, want 'too large' (not an overflow to a negative number)", err)
	}
	if _, err := Load(LoadOptions{NoFile: true, Overrides: []string{"CONCURRENT_REQUESTS=1e300"}}); err == nil {
		t.Error("-s CONCURRENT_REQUESTS=1e300 accepted")
	}
}

func TestHugeSecondsSaturate(t *testing.T) {
	for _, v := range []string{"1e10", "1e300", "9.3e9"} {
		s, err := Load(LoadOptions{NoFile: true, Overrides: []string{"DOWNLOAD_DELAY=" + v, "DOWNLOAD_TIMEOUT=" + v}})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		for _, n := range []string{"DOWNLOAD_DELAY", "DOWNLOAD_TIMEOUT"} {
			if d := s.Seconds(n); d != MaxSeconds*time.Second {
				t.Errorf("%s=%s: Seconds = %v, want the MaxSeconds cap (never zero or negative)", n, v, d)
			}
		}
	}
	tests := []struct {
		in   float64
		want time.Duration
	}{
		{0, 0}, {1.5, 1500 * time.Millisecond}, {-2, -2 * time.Second},
		{1e10, MaxSeconds * time.Second}, {math.Inf(1), MaxSeconds * time.Second},
		{-1e300, -MaxSeconds * time.Second}, {math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := Duration(tt.in); got != tt.want {
			t.Errorf("Duration(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
