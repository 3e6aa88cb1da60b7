package democmd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/cli"
)

// `gocrawl sim --config FILE` prints each host's URL, serves it, and on
// interrupt prints what each host saw.
func TestSim(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(cfg, []byte("hosts:\n  - name: alpha\n    pages: {count: 3}\n  - name: beta\n    limit: {rate: 0.001, burst: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	prog := cli.Program{Commands: []cli.Command{Sim}}
	done := make(chan int, 1)
	go func() {
		done <- prog.Run(ctx, []string{"sim", "--config", cfg}, pw, &stderr)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	urls := map[string]string{}
	for len(urls) < 2 && lines.Scan() {
		f := strings.Fields(lines.Text())
		urls[f[0]] = f[1]
	}
	for host, status := range map[string]int{"alpha": 200, "beta": 200} {
		res, err := http.Get(urls[host])
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		res.Body.Close()
		if res.StatusCode != status {
			t.Errorf("%s: status %d, want %d", host, res.StatusCode, status)
		}
	}
	res, err := http.Get(urls["beta"]) // the bucket of 1 is empty now
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 429 {
		t.Errorf("beta second request: status %d, want 429", res.StatusCode)
	}
	cancel()
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	out := rest.String()
	if !strings.Contains(out, "inside Retry-After") || !strings.Contains(out, "429: 1") {
		t.Errorf("stats at exit:\n%s", out)
	}

	stderr.Reset()
	code := prog.Run(t.Context(), []string{"sim", "--config", filepath.Join(dir, "missing.yaml")}, io.Discard, &stderr)
	if code != cli.ExitUsage || !strings.Contains(stderr.String(), "missing.yaml") {
		t.Errorf("missing config: exit %d, stderr %q; want exit 2 naming the file", code, stderr.String())
	}
}
