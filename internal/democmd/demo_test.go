package democmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/cli"
)

// The demo crawls the quotes, books and shop hosts, writes the items and
// the report, prints results to stdout and only logs to stderr.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	// A project's gocrawl.yaml must not slow the demo down.
	os.WriteFile(filepath.Join(dir, "gocrawl.yaml"), []byte("DOWNLOAD_DELAY: 30\n"), 0o644)
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := cli.Program{Commands: []cli.Command{Demo}}.Run(t.Context(),
		[]string{"demo", "-s", "LOG_FORMAT=json"}, &stdout, &stderr)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"demo site: quotes at http://127.0.0.1:", "a rate-limited shop at http://localhost:",
		"--- quotes: finished", "--- books: finished", "--- shop: finished", "ok responses/s", "per scope:",
		"items written to demo-items.jsonl", "report of the throttled crawl: demo-report.html", "--experiment adds"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// stderr is the JSON log stream and nothing else.
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("stderr line is not a JSON log record: %q", l)
		}
	}
	// The shop refuses bursts: the crawl must have met 429s and still got
	// every page.
	if !strings.Contains(out, "(200: 40, 429: ") && !strings.Contains(out, "(200: 41, 429: ") {
		t.Errorf("the shop crawl met no 429 or missed pages:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "demo-items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	quotes, books := 0, 0
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if _, ok := m["text"]; ok {
			quotes++
		}
		if _, ok := m["price"]; ok {
			books++
		}
	}
	if quotes == 0 || books == 0 {
		t.Errorf("%d quotes and %d books in %d items", quotes, books, len(lines))
	}
	if !strings.Contains(out, fmt.Sprintf("%d items written", len(lines))) {
		t.Errorf("summary does not count the %d items:\n%s", len(lines), out)
	}
	page, err := os.ReadFile(filepath.Join(dir, "demo-report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gocrawl report: shop", `data-plot="scope0-delay"`, `<td class="k">429</td>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("demo-report.html lacks %q", want)
		}
	}
}
