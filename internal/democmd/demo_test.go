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

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	// A project's gocrawl.yaml must not slow the demo down.
	os.WriteFile(filepath.Join(dir, "gocrawl.yaml"), []byte("DOWNLOAD_DELAY: 30\n"), 0o644)
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	code := cli.Program{Commands: []cli.Command{Demo}}.Run(t.Context(),
		[]string{"demo", "-s", "LOG_LEVEL=WARNING", "-s", "DEMO_EXPERIMENT_PAGES=0"}, &stdout, &stderr) // the experiment has its own test
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"demo site: quotes at http://127.0.0.1:", "--- quotes: finished", "--- books: finished",
		"ok responses/s", "items written to demo-items.jsonl"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stderr.String())
		}
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
	if !strings.Contains(stderr.String(), fmt.Sprintf("%d items written", len(lines))) {
		t.Errorf("summary does not count the %d items:\n%s", len(lines), stderr.String())
	}
}
