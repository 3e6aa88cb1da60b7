package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// ErrNoBrowser is the kind of the error New returns when no Chromium binary
// can be found: errors.Is(err, ErrNoBrowser). Its message names the package
// to install and the setting to point at a binary.
var ErrNoBrowser = errors.New("no Chromium browser found")

// browserNames are the binaries searched in PATH, in order.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}

// FindBrowser returns the browser binary to run: path when it is set (it
// must exist and be executable), else the first of chromium,
// chromium-browser, google-chrome, google-chrome-stable in PATH.
func FindBrowser(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: RENDER_BROWSER_PATH %q: %v", ErrNoBrowser, path, err)
		}
		return p, nil
	}
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: rendering needs Chromium; install the distribution's package "+
		"(Debian/Ubuntu: apt-get install chromium) or set RENDER_BROWSER_PATH to a Chromium or Chrome binary "+
		"(searched in PATH: %s)", ErrNoBrowser, strings.Join(browserNames[:4], ", "))
}

// browserStartTimeout bounds the start of a browser process.
const browserStartTimeout = time.Minute

// process is one browser process and the tabs it hosts. gen counts its
// restarts: a tab whose target belongs to an older generation is recreated.
type process struct {
	id    int
	r     *Renderer
	mu    sync.Mutex
	gen   int
	ctx   context.Context // the browser's chromedp context (nil until started)
	stop  func()          // kills the browser and removes its profile
	pid   int
	pages int  // pages rendered by this generation
	busy  int  // tabs of this process rendering now
	stale bool // restart once idle (page count or memory over the limit)
	dead  bool // crashed or lost: restart before the next use
}

// start launches a new browser process (the caller holds p.mu).
func (p *process) startLocked() error {
	dir, err := os.MkdirTemp("", "gocrawl-chromium-")
	if err != nil {
		return fmt.Errorf("render: browser profile directory: %w", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(p.r.bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(dir),
		// Without these, Chromium phones home (component updates, sync,
		// field trials); on a closed network its connections are refused
		// and it logs errors, on an open one it wastes bandwidth.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		// Rendering must not slow down in tabs the browser thinks hidden.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-popup-blocking", true),
		chromedp.Flag("disable-hang-monitor", true),
		chromedp.WindowSize(1280, 1024),
	}
	for _, a := range p.r.opts.Args {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if hasVal {
			opts = append(opts, chromedp.Flag(name, val))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	// The first Run starts the browser; its context must not have a
	// timeout (it would end the browser), so the start is bounded by a
	// watchdog instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }()
	select {
	case err = <-started:
	case <-p.r.closed:
		err = errors.New("renderer closed")
	case <-time.After(browserStartTimeout):
		err = fmt.Errorf("the browser did not answer within %v", browserStartTimeout)
	}
	if err != nil {
		bcancel()
		acancel()
		_ = os.RemoveAll(dir)
		return fmt.Errorf("render: starting %s: %w", p.r.bin, err)
	}
	pid := 0
	if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		pid = c.Browser.Process().Pid
	}
	p.gen++
	p.ctx, p.pid, p.pages, p.stale, p.dead = bctx, pid, 0, false, false
	p.stop = func() {
		_ = chromedp.Cancel(bctx)
		bcancel()
		acancel()
		_ = os.RemoveAll(dir)
	}
	p.r.stats.Inc("render/browser_starts", 1)
	p.r.log.Debug().Int("browser", p.id).Int("pid", pid).Int("generation", p.gen).Msg("browser started")
	return nil
}

// stopLocked ends the browser process, if any (the caller holds p.mu).
func (p *process) stopLocked() {
	if p.stop != nil {
		p.stop()
		p.stop, p.ctx, p.pid = nil, nil, 0
	}
}

// alive asks the browser for its version: a crashed or killed browser
// does not answer.
func (p *process) alive(ctx context.Context) bool {
	p.mu.Lock()
	bctx := p.ctx
	p.mu.Unlock()
	if bctx == nil {
		return false
	}
	cctx, cancel := context.WithTimeout(bctx, probeTimeout)
	defer cancel()
	_, err := chromedp.CallBrowser(cctx, browser.GetVersion, cdp.Empty{})
	return err == nil
}

// RSS returns the resident memory, in bytes, of the process tree rooted at
// pid (the browser and its renderer, GPU and utility processes), read
// from /proc: the sum of their proportional set sizes (shared pages
// divided among the processes sharing them), or of their RSS where the
// kernel gives no PSS; 0 where /proc is not available.
func RSS(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	children := map[int][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := ppid(n); pp > 0 {
			children[pp] = append(children[pp], n)
		}
	}
	var total int64
	stack := []int{pid}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		total += rssOf(n)
		stack = append(stack, children[n]...)
	}
	return total
}

func ppid(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func rssOf(pid int) int64 {
	// The proportional set size counts a page shared by n processes as
	// 1/n in each, so the tree's sum is not inflated by the shared
	// libraries every Chromium process maps; plain RSS is the fallback.
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					return kb << 10
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
