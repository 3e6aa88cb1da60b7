package report

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/browsertest"
)

// plotCheck is what the page's own DOM says about its plots, as rendered
// by Chromium.
type plotCheck struct {
	Plots     int  `json:"plots"`
	Drawn     int  `json:"drawn"` // plots with at least one line path of non-zero length
	Refs      int  `json:"refs"`
	Tables    int  `json:"tables"`
	Scripts   int  `json:"scripts"`
	Width     int  `json:"width"` // rendered width of the first plot, px
	Refreshed int  `json:"refreshed"`
	Stopped   bool `json:"stopped"`
}

const plotCheckJS = `(() => {
  const plots = [...document.querySelectorAll("svg.plot")];
  const drawn = plots.filter(p => [...p.querySelectorAll("path.line")].some(l => l.getTotalLength() > 0)).length;
  return {
    plots: plots.length, drawn: drawn,
    refs: document.querySelectorAll("svg.plot > line.ref").length,
    tables: document.querySelectorAll("table").length,
    scripts: document.scripts.length,
    width: plots.length ? Math.round(plots[0].getBoundingClientRect().width) : 0,
    refreshed: Number(document.body.dataset.refreshed || 0),
    stopped: document.body.dataset.stopped === "true",
  };
})()`

// TestReportRendersInChromium opens a report in headless Chromium and
// checks, from the rendered page, that every plot is there and drawn,
// with no script error.
func TestReportRendersInChromium(t *testing.T) {
	b := browsertest.New(t, 1400, 1000)
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(f, FromDump(sampleDump("strict.example"), "sample.json"), Options{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b.Navigate("file://" + path)
	var got plotCheck
	b.Eval(plotCheckJS, &got)
	// 2 global plots + 4 per scope for 2 scopes.
	if got.Plots != 10 || got.Drawn != 10 {
		t.Errorf("%d plots, %d drawn; want 10 and 10", got.Plots, got.Drawn)
	}
	if got.Refs < 3 || got.Tables < 4 || got.Scripts != 0 || got.Width < 250 {
		t.Errorf("rendered page: %+v", got)
	}
	b.NoErrors()
}

// TestLiveReportRefreshesInChromium serves the live page and checks, in
// Chromium, that it refreshes itself without a script error while the
// crawl runs, and stops quietly when the server goes away.
func TestLiveReportRefreshesInChromium(t *testing.T) {
	b := browsertest.New(t, 1200, 900)
	srv := httptest.NewServer(Handler(func() *Data { return FromDump(sampleDump("strict.example"), "the running crawl") }, Options{}, time.Second))
	defer srv.Close()
	b.Navigate(srv.URL + "/")
	var got plotCheck
	deadline := time.Now().Add(20 * time.Second)
	for {
		b.Eval(plotCheckJS, &got)
		if got.Refreshed >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got.Refreshed < 2 || got.Plots != 10 || got.Drawn != 10 || got.Scripts != 1 {
		t.Errorf("live page after its refreshes: %+v", got)
	}
	srv.Close()
	deadline = time.Now().Add(20 * time.Second)
	for !got.Stopped && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		b.Eval(plotCheckJS, &got)
	}
	if !got.Stopped || got.Plots != 10 {
		t.Errorf("after the server closed: %+v (want the page kept, refresh stopped)", got)
	}
	b.NoErrors()
}
