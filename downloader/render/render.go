package render

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/downloader/handler"
	"github.com/gocrawl/gocrawl/downloader/netguard"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Request meta keys read by the renderer and by the engine's choice of
// handler.
const (
	// MetaRender (bool) renders the request (true) or fetches it over
	// plain HTTP (false), whatever RENDER_JS and RENDER_SCOPES say (see
	// handler.Rendering).
	MetaRender = handler.MetaRender
	// MetaWait ("load", "domcontentloaded", "networkidle") overrides
	// RENDER_WAIT.
	MetaWait = "render_wait"
	// MetaWaitSelector (CSS selector) overrides RENDER_WAIT_SELECTOR.
	MetaWaitSelector = "render_wait_selector"
	// MetaTimeout (seconds) overrides RENDER_TIMEOUT.
	MetaTimeout = "render_timeout"
	// MetaScreenshot (bool) overrides RENDER_SCREENSHOT.
	MetaScreenshot = "render_screenshot"
	// MetaThirdParty ("throttle" or "block") overrides RENDER_THIRD_PARTY.
	MetaThirdParty = "render_third_party"
	// MetaScroll (int) scrolls to the bottom of the page this many times
	// after it is ready, waiting each time for the page to grow (infinite
	// scroll), before the DOM is taken.
	MetaScroll = "render_scroll"
)

// Error kinds of failed renders, usable in RETRY_EXCEPTIONS and
// BACKOFF_EXCEPTIONS by name. A render that times out is a
// DownloadTimeoutError and one whose page cannot be loaded a
// DownloadFailedError, as for plain HTTP.
var (
	// RendererCrashed: the page's renderer process crashed (out of
	// memory, a browser bug); the tab is replaced and the crawl goes on.
	RendererCrashed = errkind.New("RendererCrashedError")
	// BrowserUnavailable: the browser could not be started or died.
	BrowserUnavailable = errkind.New("BrowserUnavailableError")
)

func init() {
	errkind.Register(RendererCrashed.Name(), RendererCrashed)
	errkind.Register(BrowserUnavailable.Name(), BrowserUnavailable)
}

// ErrClosed is returned by Fetch after Close.
var ErrClosed = errors.New("render: renderer closed")

// probeTimeout bounds the liveness check of a browser after a failed render.
const probeTimeout = 3 * time.Second

// WaitMode says when a loaded page is ready to be taken.
type WaitMode string

// Wait modes (RENDER_WAIT, the render_wait meta).
const (
	WaitLoad             WaitMode = "load"
	WaitDOMContentLoaded WaitMode = "domcontentloaded"
	WaitNetworkIdle      WaitMode = "networkidle"
)

// lifecycle is the name of the Page.lifecycleEvent a wait mode waits for.
func (w WaitMode) lifecycle() string {
	switch w {
	case WaitDOMContentLoaded:
		return "DOMContentLoaded"
	case WaitNetworkIdle:
		return "networkIdle"
	}
	return "load"
}

func parseWait(s string) (WaitMode, error) {
	switch w := WaitMode(strings.ToLower(strings.TrimSpace(s))); w {
	case WaitLoad, WaitDOMContentLoaded, WaitNetworkIdle:
		return w, nil
	case "":
		return WaitLoad, nil
	}
	return "", fmt.Errorf("%q is not a wait mode (want load, domcontentloaded or networkidle)", s)
}

// Options configure a Renderer.
type Options struct {
	// BrowserPath is RENDER_BROWSER_PATH ("" = search PATH).
	BrowserPath string
	// Args are extra browser flags (RENDER_BROWSER_ARGS).
	Args []string
	// Tabs is BROWSER_CONCURRENCY: pages rendered at once.
	Tabs int
	// Processes is RENDER_BROWSER_PROCESSES: browser processes the tabs
	// are spread over.
	Processes int
	// Wait, WaitSelector and Timeout are the defaults of the render_wait,
	// render_wait_selector and render_timeout meta.
	Wait         WaitMode
	WaitSelector string
	Timeout      time.Duration
	// BlockTypes are DevTools resource types never loaded (Image, Font...).
	BlockTypes []string
	// BlockThirdParty fails subresources of hosts other than the page's.
	BlockThirdParty bool
	// Screenshot attaches a PNG screenshot to every rendered response.
	Screenshot bool
	// MaxPages and MaxMemory (bytes) restart a browser process after that
	// many pages or above that resident memory (0 = never).
	MaxPages  int
	MaxMemory int64
	// Throttler admits subresource requests; nil lets them through
	// unthrottled (tests of the renderer alone).
	Throttler handler.Throttler
	// Actor runs the spider's own page actions; nil = none.
	Actor PageActor
	// Stats receives the render/* counters; nil = a private collector.
	Stats *stats.Collector
	// Log receives browser starts, restarts and crashes.
	Log zerolog.Logger
	// Guard is the SSRF guard (SSRF_PROTECTION_ENABLED); nil = off. The
	// browser resolves and connects on its own, so the guard checks every
	// request the page makes (its document, each redirect hop,
	// subresources, XHR) by its host: address literals and localhost
	// names, and the addresses a DNS lookup here gives for other names. A
	// name that resolves differently for the browser (DNS rebinding) is
	// not caught; WebSocket frames and requests of service workers are not
	// seen either.
	Guard *netguard.Guard
	// Archive (WARC_DIR set) collects every exchange the browser makes
	// for a page, bodies included, for the Warc middleware's Capture (see
	// downloader.BrowserExchange); MaxSize (DOWNLOAD_MAXSIZE, 0 = none)
	// cuts the archived bodies. Without Archive nothing is collected.
	Archive bool
	MaxSize int64
}

// OptionsFromSettings reads the RENDER_* settings and BROWSER_CONCURRENCY;
// invalid values give an error naming the setting.
func OptionsFromSettings(s *settings.Settings) (Options, error) {
	o := Options{
		BrowserPath:     s.String("RENDER_BROWSER_PATH"),
		Args:            s.Strings("RENDER_BROWSER_ARGS"),
		Tabs:            s.Int("BROWSER_CONCURRENCY"),
		Processes:       s.Int("RENDER_BROWSER_PROCESSES"),
		WaitSelector:    s.String("RENDER_WAIT_SELECTOR"),
		Timeout:         s.Seconds("RENDER_TIMEOUT"),
		BlockTypes:      s.Strings("RENDER_BLOCK_RESOURCE_TYPES"),
		Screenshot:      s.Bool("RENDER_SCREENSHOT"),
		MaxPages:        s.Int("RENDER_BROWSER_MAX_PAGES"),
		MaxMemory:       int64(s.Float("RENDER_BROWSER_MAX_MEMORY") * (1 << 20)),
		BlockThirdParty: false,
		Archive:         s.String("WARC_DIR") != "",
		MaxSize:         int64(s.Int("DOWNLOAD_MAXSIZE")),
	}
	var err error
	if o.Guard, err = netguard.FromSettings(s); err != nil {
		return o, err
	}
	if o.Wait, err = parseWait(s.String("RENDER_WAIT")); err != nil {
		return o, fmt.Errorf("RENDER_WAIT: %v", err)
	}
	switch tp := strings.ToLower(s.String("RENDER_THIRD_PARTY")); tp {
	case "throttle", "":
	case "block":
		o.BlockThirdParty = true
	default:
		return o, fmt.Errorf("RENDER_THIRD_PARTY: %q is not a policy (want throttle or block)", tp)
	}
	if o.Tabs < 1 {
		return o, errors.New("BROWSER_CONCURRENCY: must be at least 1")
	}
	if o.Processes < 1 || o.Processes > o.Tabs {
		return o, fmt.Errorf("RENDER_BROWSER_PROCESSES: %d must be between 1 and BROWSER_CONCURRENCY (%d)", o.Processes, o.Tabs)
	}
	for _, t := range o.BlockTypes {
		if !knownType(t) {
			return o, fmt.Errorf("RENDER_BLOCK_RESOURCE_TYPES: unknown resource type %q (known: %s)", t, strings.Join(resourceTypes, ", "))
		}
	}
	if o.Timeout <= 0 {
		return o, errors.New("RENDER_TIMEOUT: must be positive")
	}
	return o, nil
}

// Renderer renders requests in headless Chromium: Options.Tabs tabs over
// Options.Processes browser processes, started at the first render. It is
// safe for concurrent use; Fetch blocks while every tab is busy.
type Renderer struct {
	opts   Options
	bin    string
	stats  *stats.Collector
	log    zerolog.Logger
	procs  []*process
	tabs   *tabPool
	closed chan struct{}
	once   sync.Once

	peakRSS atomic.Int64
}

// New checks that a browser binary exists and prepares the pool; no browser
// is started until the first Fetch. Without a browser the error wraps
// ErrNoBrowser and names the package to install and the setting to set.
func New(opts Options) (*Renderer, error) {
	bin, err := FindBrowser(opts.BrowserPath)
	if err != nil {
		return nil, err
	}
	if opts.Tabs < 1 {
		opts.Tabs = 1
	}
	if opts.Processes < 1 {
		opts.Processes = 1
	}
	opts.Processes = min(opts.Processes, opts.Tabs)
	if opts.Wait == "" {
		opts.Wait = WaitLoad
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Stats == nil {
		opts.Stats = stats.New()
	}
	r := &Renderer{opts: opts, bin: bin, stats: opts.Stats, log: opts.Log,
		tabs: newTabPool(), closed: make(chan struct{})}
	for i := range opts.Processes {
		r.procs = append(r.procs, &process{id: i, r: r})
	}
	for i := range opts.Tabs {
		r.tabs.put(&tab{id: i, proc: r.procs[i%opts.Processes], r: r})
	}
	return r, nil
}

// Browser returns the path of the browser binary in use.
func (r *Renderer) Browser() string { return r.bin }

// PIDs returns the process ids of the running browser processes.
func (r *Renderer) PIDs() []int {
	var out []int
	for _, p := range r.procs {
		p.mu.Lock()
		if p.pid > 0 {
			out = append(out, p.pid)
		}
		p.mu.Unlock()
	}
	return out
}

// RSS returns the resident memory of every browser process tree, in bytes.
func (r *Renderer) RSS() int64 {
	var total int64
	for _, pid := range r.PIDs() {
		total += RSS(pid)
	}
	return total
}

// PeakRSS returns the largest RSS measured after a render so far.
func (r *Renderer) PeakRSS() int64 { return r.peakRSS.Load() }

// Fetch renders req: it waits for a free tab, loads the page (subresources
// admitted through the Throttler), waits as the request asks, runs the
// page actions and returns the rendered DOM as the body, with the final
// URL and the main document's status and headers. Errors are
// *downloader.Error values: DownloadTimeoutError, DownloadFailedError,
// RendererCrashedError or BrowserUnavailableError.
func (r *Renderer) Fetch(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	if err := r.opts.Guard.CheckName(ctx, req.URL.Hostname(), nil); err != nil {
		r.stats.Inc("render/blocked_address", 1)
		return nil, err
	}
	proxy, err := proxyServer(req)
	if err != nil {
		return nil, &downloader.Error{Kind: errkind.DownloadFailed, URL: req.URL.Redacted(), Err: err}
	}
	t, err := r.tabs.get(ctx, proxy, r.closed)
	if err != nil {
		return nil, err
	}
	defer r.tabs.put(t)
	if err := t.prepare(proxy); err != nil {
		return nil, &downloader.Error{Kind: BrowserUnavailable, URL: req.URL.Redacted(), Err: err}
	}
	res, err := t.render(ctx, req)
	r.finish(t, err)
	return res, err
}

// finish updates the tab's process after a render: page count, memory,
// and whether it must be restarted.
func (r *Renderer) finish(t *tab, err error) {
	p := t.proc
	dead := false
	if err != nil && !errors.Is(err, context.Canceled) && !t.crashed.Load() && !p.alive(context.Background()) {
		dead = true
	}
	p.mu.Lock()
	p.busy--
	p.pages++
	pid, pages := p.pid, p.pages
	if dead {
		r.markDeadLocked(p)
	}
	if r.opts.MaxPages > 0 && p.pages >= r.opts.MaxPages && !p.stale {
		p.stale = true
		r.log.Debug().Int("browser", p.id).Int("pages", p.pages).Msg("browser reached RENDER_BROWSER_MAX_PAGES; restarting it when idle")
	}
	p.mu.Unlock()
	// Memory: after every page when RENDER_BROWSER_MAX_MEMORY is set (it
	// reads /proc, a few milliseconds), else every 8th for the stats.
	if pid <= 0 || (r.opts.MaxMemory <= 0 && pages%8 != 1) {
		return
	}
	rss := RSS(pid)
	for old := r.peakRSS.Load(); rss > old && !r.peakRSS.CompareAndSwap(old, rss); old = r.peakRSS.Load() {
	}
	r.stats.Max("render/browser_rss_peak_bytes", float64(rss))
	if r.opts.MaxMemory > 0 && rss > r.opts.MaxMemory {
		p.mu.Lock()
		if p.pid == pid && !p.stale {
			p.stale = true
			r.log.Info().Int("browser", p.id).Int64("rss_mib", rss>>20).Msg("browser uses more than RENDER_BROWSER_MAX_MEMORY; restarting it when idle")
		}
		p.mu.Unlock()
	}
}

// Close ends every browser process. Fetch calls after Close fail.
func (r *Renderer) Close() error {
	r.once.Do(func() {
		close(r.closed)
		// Wait for the tabs in use to come back, then end everything.
		for _, t := range r.tabs.drain(r.opts.Tabs) {
			t.close()
		}
		for _, p := range r.procs {
			p.mu.Lock()
			p.stopLocked()
			p.mu.Unlock()
		}
	})
	return nil
}

// proxyServer is the browser's form of the request's proxy meta
// (scheme://host:port, credentials left out: they are given when the proxy
// asks), "" without one.
func proxyServer(req *spider.Request) (string, error) {
	p, _ := req.Get(downloader.MetaProxy).(string)
	if p == "" {
		return "", nil
	}
	u, err := url.Parse(p)
	if err != nil || u.Host == "" {
		return "", errors.New("invalid proxy meta (want http://[user:pass@]host:port)")
	}
	return u.Scheme + "://" + u.Host, nil
}

// hostOf is the host key of a URL string ("" when it does not parse).
func hostOf(raw string) (*url.URL, string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, ""
	}
	return u, spider.HostKey(u)
}

// markDeadLocked records that p's browser died, once: the next render
// that needs it restarts it. p.mu must be held.
func (r *Renderer) markDeadLocked(p *process) {
	if p.dead {
		return
	}
	p.dead = true
	r.stats.Inc("render/browser_crashes", 1)
	r.log.Warn().Int("browser", p.id).Int("pid", p.pid).Msg("browser process died; restarting it")
}
