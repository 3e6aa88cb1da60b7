package democmd

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/settings"
)

// The experiment at a small scale: every configuration finishes, the
// table has a column per configuration, and the site's own records show
// what each configuration promises: the naive pool sends no retries, and
// with the defaults no host ever sees more than CONCURRENT_REQUESTS_PER_DOMAIN
// requests at once.
func TestDemoExperiment(t *testing.T) {
	const pages = 20
	s := settings.New()
	if err := s.Set("LOG_LEVEL", "ERROR", settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d := &demo{app: &cli.App{Stdout: &out, Stderr: &out}, settings: s, logs: &cli.Logs{Logger: zerolog.Nop()}, experiment: true}
	runs, err := startExperiment(t.Context(), d, pages)
	defer func() {
		for _, r := range runs {
			if r.site != nil {
				r.site.Close()
			}
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	runExperiment(t.Context(), d, runs)
	perDomain := s.Int("CONCURRENT_REQUESTS_PER_DOMAIN")
	for _, r := range runs {
		if r.err != nil {
			t.Fatalf("%s: %v", r.cfg.Name, r.err)
		}
		strict, lenient := r.server["strict"], r.server["lenient"]
		if strict.ByStatus[200] > pages {
			t.Errorf("%s: %d ok pages of the strict host's %d", r.cfg.Name, strict.ByStatus[200], pages)
		}
		if lenient.ByStatus[200] != pages {
			t.Errorf("%s: lenient host served %d ok pages, want all %d", r.cfg.Name, lenient.ByStatus[200], pages)
		}
		switch r.cfg.Name {
		case "naive pool":
			// No retries: each page is asked for once (robots.txt is not
			// counted).
			if strict.Requests > pages {
				t.Errorf("naive pool: %d requests to the strict host for %d pages: it retried", strict.Requests, pages)
			}
		default:
			for name, h := range map[string]int{"strict": strict.PeakConcurrent, "lenient": lenient.PeakConcurrent} {
				if h > perDomain {
					t.Errorf("%s: %s host saw %d requests at once, more than CONCURRENT_REQUESTS_PER_DOMAIN=%d", r.cfg.Name, name, h, perDomain)
				}
			}
		}
	}
	out.Reset()
	writeExperimentTable(&out, runs)
	table := out.String()
	// Every row of the table is explained in docs/cli.md.
	demoDoc := cliDoc(t, "## gocrawl demo")
	for _, line := range strings.Split(table, "\n") {
		label, _, _ := strings.Cut(strings.TrimSpace(line), "  ")
		label = strings.TrimSpace(label)
		if !strings.HasPrefix(label, "strict ") && !strings.HasPrefix(label, "lenient ") && label != "wall time" {
			continue
		}
		label = strings.Replace(strings.Replace(label, "strict", "HOST", 1), "lenient", "HOST", 1)
		if !strings.Contains(demoDoc, "`"+label+"`") {
			t.Errorf("docs/cli.md, gocrawl demo, does not explain the row %q", label)
		}
	}
	for _, want := range []string{"naive pool", "defaults", "rampup", "strict ok", "strict 429", "lenient peak in flight", "strict starts in first 500 ms", "wall time", "strict 429 share", "naive pool " + fmt.Sprint(runs[0].server["strict"].ByStatus[200]) + " of 20 pages", "Rampup starts a scope at one request"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}
