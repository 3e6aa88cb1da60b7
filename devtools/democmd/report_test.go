package democmd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/devtools/browsertest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "rewrite docs/report-demo.png from the demo's report")

// The demo's report opens in headless Chromium with every plot drawn and
// no script error. With -update-screenshot it becomes docs/report-demo.png:
//
//	go test ./devtools/democmd -run TestDemoReportInChromium -update-screenshot
func TestDemoReportInChromium(t *testing.T) {
	png, err := filepath.Abs(filepath.Join("..", "..", "docs", "report-demo.png"))
	if err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t, 1280, 900)
	dir := t.TempDir()
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := (cli.Program{Commands: []cli.Command{Demo}}).Run(t.Context(), []string{"demo"}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	b.Navigate("file://" + filepath.Join(dir, DefaultDemoReport))
	var got struct {
		Plots, Drawn, Refs int
	}
	b.Eval(`(() => {
  const plots = [...document.querySelectorAll("svg.plot")];
  return {
    Plots: plots.length,
    Drawn: plots.filter(p => [...p.querySelectorAll("path.line")].some(l => l.getTotalLength() > 0)).length,
    Refs: document.querySelectorAll("svg.plot > line.ref").length,
  };
})()`, &got)
	// The whole crawl (2 plots) and the shop (4 plots), all drawn, with the
	// shop's configured limits.
	if got.Plots != 6 || got.Drawn != 6 || got.Refs < 2 {
		t.Errorf("demo report in Chromium: %+v", got)
	}
	b.NoErrors()
	if *updateScreenshot {
		if err := os.WriteFile(png, b.Screenshot(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", png)
	}
}
