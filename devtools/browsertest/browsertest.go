// Package browsertest opens pages in headless Chromium for tests: it finds
// the browser (Debian's chromium package, which scripts/test.sh installs
// when missing), starts it with a throw-away profile and no network
// features, and records every script error and console error of the page,
// so that a test can prove a page renders and runs cleanly.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path returns the Chromium executable: $CHROMIUM if set, else the first
// of chromium, chromium-browser, google-chrome on PATH, or "".
func Path() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is a headless Chromium for one test.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu     sync.Mutex
	errors []string
}

// New starts headless Chromium for t, or skips t when no Chromium is
// installed (scripts/test.sh installs Debian's chromium package). The
// browser is closed when t ends.
func New(t testing.TB, width, height int) *Browser {
	t.Helper()
	path := Path()
	if path == "" {
		t.Skip("no Chromium found (set CHROMIUM or install the chromium package; scripts/test.sh does)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{t: t, ctx: ctx}
	// Start the browser now, so that a failure to start is reported as
	// such.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}
	// Uncaught exceptions, unhandled rejections and console.error calls of
	// the page. Entries of the browser's own log (a refused connection of
	// a fetch the page handles) have no arguments and are not the page's
	// errors.
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleError && len(m.Args) > 0 {
				b.record(fmt.Sprintf("%s at %s:%d: %s", m.Type, m.URL, m.Line+1, m.Text))
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-done
	})
	return b
}

func (b *Browser) record(msg string) {
	b.mu.Lock()
	b.errors = append(b.errors, msg)
	b.mu.Unlock()
}

// Errors returns the script exceptions and console errors seen so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Do runs chromedp actions with a timeout, failing the test on error.
func (b *Browser) Do(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// Navigate loads url and waits for its body.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	b.Do(30*time.Second, chromedp.Navigate(url), chromedp.WaitReady("body"))
}

// Eval evaluates a JavaScript expression in the page and decodes its JSON
// value into out.
func (b *Browser) Eval(expr string, out any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
	if err != nil {
		b.t.Fatalf("browser: evaluating %.40q...: %v", expr, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.t.Fatalf("browser: decoding %s: %v", raw, err)
	}
}

// Screenshot returns a PNG of the whole page.
func (b *Browser) Screenshot() []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("browser: screenshot: %v", err)
	}
	return png
}

// NoErrors fails the test if the page threw or logged an error.
func (b *Browser) NoErrors() {
	b.t.Helper()
	if errs := b.Errors(); len(errs) > 0 {
		b.t.Errorf("the page had %d script or console errors:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}

// String describes the browser, for logs.
func (b *Browser) String() string { return fmt.Sprintf("chromium at %s", Path()) }
