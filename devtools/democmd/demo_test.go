package democmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	// The shop refuses bursts and says so in RateLimit headers: the rate
	// controller paces from the first answer's headers, before any 429
	// (one or two may meet the first burst on a loaded machine), and the
	// crawl gets every page.
	_, shop, _ := strings.Cut(out, "--- shop: finished")
	resp := regexp.MustCompile(`responses +\d+ +\(200: (\d+)(?:, 429: (\d+))?\)`).FindStringSubmatch(shop)
	if resp == nil || (resp[1] != "40" && resp[1] != "41") {
		t.Errorf("the shop crawl missed pages (want 40 pages and robots.txt):\n%s", out)
	} else if n, _ := strconv.Atoi(resp[2]); n > 2 {
		t.Errorf("the shop crawl met %d 429s: the RateLimit headers did not pace it:\n%s", n, out)
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
	for _, want := range []string{"gocrawl report: shop", `data-plot="scope0-delay"`, `<td class="k">200</td>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("demo-report.html lacks %q", want)
		}
	}
}

// cliDoc returns the section of docs/cli.md that starts at heading.
func cliDoc(t *testing.T, heading string) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(md), heading+"\n")
	if !ok {
		t.Fatalf("docs/cli.md has no %q", heading)
	}
	return sec
}

// summaryLabels returns the labels of the summaries in out: the first
// column of each summary line and the per-scope table's headers.
func summaryLabels(out string) []string {
	seen := map[string]bool{}
	var labels []string
	add := func(l string) {
		if l != "" && !seen[l] {
			seen[l] = true
			labels = append(labels, l)
		}
	}
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			in = true
		case strings.TrimSpace(line) == "":
			in = false
		case in && strings.HasPrefix(line, "    scope "):
			for _, h := range regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1) {
				add(h)
			}
		case in && !strings.HasPrefix(line, " "):
			label, _, _ := strings.Cut(line, "  ")
			add(strings.TrimSpace(label))
		}
	}
	return labels
}

// Every figure the demo prints is explained in docs/cli.md.
func TestDemoFiguresDocumented(t *testing.T) {
	doc := cliDoc(t, "### Reading the summary")
	demoDoc := cliDoc(t, "## gocrawl demo")
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := (cli.Program{Commands: []cli.Command{Demo}}).Run(t.Context(), []string{"demo", "--report", ""}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	labels := summaryLabels(stdout.String())
	if len(labels) < 20 {
		t.Fatalf("only %d labels found in:\n%s", len(labels), stdout.String())
	}
	for _, l := range labels {
		if !strings.Contains(doc, "`"+l+"`") {
			t.Errorf("docs/cli.md, Reading the summary, does not explain %q", l)
		}
	}
	for _, l := range []string{"demo site: ...", "demo finished in ELAPSED: N items written to FILE"} {
		if !strings.Contains(demoDoc, "`"+l+"`") {
			t.Errorf("docs/cli.md, gocrawl demo, does not explain %q", l)
		}
	}
}
