package render

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/downloader/handler"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// pageRun is the state of one render: the page's document, its lifecycle
// events, and the subresource requests admitted and not finished yet.
type pageRun struct {
	t         *tab
	req       *spider.Request
	host      string
	ctx       context.Context // ends with the render: pending admissions give up
	report    func(res *spider.Response, err error)
	proxyUser *url.Userinfo
	block3rd  bool // fail requests to other hosts (RENDER_THIRD_PARTY: block)

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when an event arrives
	loader   cdp.LoaderID
	events   map[cdp.LoaderID]map[string]bool
	docs     map[cdp.LoaderID]*network.Response
	claimed  bool // the page's own document request was seen
	inflight map[network.RequestID]*admission
	crashed  bool
	blocked  error       // the SSRF guard refused a hop of the page's document
	arc      *archiveRun // the page's exchanges, for the archive (WARC_DIR); nil = none
}

// admission is one request of the page that holds throttling slots until
// it finishes loading.
type admission struct {
	req    *spider.Request
	scopes throttling.Scopes
	sentAt time.Time
	page   bool // the page's own document: reported through report
	doc    bool // a redirect hop of the page's own document
	res    *network.Response
}

func newPageRun(t *tab, ctx context.Context, req *spider.Request, report func(*spider.Response, error)) *pageRun {
	return &pageRun{t: t, req: req, host: req.Host(), ctx: ctx, report: report,
		changed: make(chan struct{}), events: map[cdp.LoaderID]map[string]bool{},
		docs: map[cdp.LoaderID]*network.Response{}, inflight: map[network.RequestID]*admission{}}
}

// notifyLocked wakes the waiters (the caller holds pr.mu).
func (pr *pageRun) notifyLocked() {
	close(pr.changed)
	pr.changed = make(chan struct{})
}

func (pr *pageRun) lifecycle(loader cdp.LoaderID, name string) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	m := pr.events[loader]
	if m == nil {
		m = map[string]bool{}
		pr.events[loader] = m
	}
	m[name] = true
	if name == "init" && pr.loader != "" && loader != pr.loader {
		// A new document in the main frame (a script navigated): wait
		// for it instead.
		pr.loader = loader
	}
	pr.notifyLocked()
}

func (pr *pageRun) crash() {
	pr.mu.Lock()
	pr.crashed = true
	pr.notifyLocked()
	pr.mu.Unlock()
}

func (pr *pageRun) response(ev *network.EventResponseReceived) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if ev.Type == network.ResourceTypeDocument && ev.FrameID == pr.t.frame {
		pr.docs[ev.LoaderID] = ev.Response
	}
	if a := pr.inflight[ev.RequestID]; a != nil {
		a.res = ev.Response
	}
}

// finished releases the slots of a request that finished loading.
func (pr *pageRun) finished(id network.RequestID, failed bool) {
	pr.mu.Lock()
	a := pr.inflight[id]
	delete(pr.inflight, id)
	pr.mu.Unlock()
	if a != nil {
		pr.release(a, failed)
	}
}

// release gives back an admission's slots with the outcome as feedback.
func (pr *pageRun) release(a *admission, failed bool) {
	var res *spider.Response
	if a.res != nil && !failed {
		res = &spider.Response{URL: a.req.URL, Status: int(a.res.Status), Header: headers(a.res.Headers), Request: a.req}
	}
	if a.page {
		if res != nil && pr.report != nil {
			pr.report(res, nil)
		}
		return
	}
	if thr := pr.t.r.opts.Throttler; thr != nil {
		thr.Done(context.Background(), a.req, a.scopes, a.sentAt, res, nil)
	}
}

// releaseAll gives back the slots of every request still loading when the
// render ends (without feedback: they were cut short by us).
func (pr *pageRun) releaseAll() {
	pr.mu.Lock()
	left := pr.inflight
	pr.inflight = map[network.RequestID]*admission{}
	pr.mu.Unlock()
	for _, a := range left {
		if !a.page {
			pr.release(a, true)
		}
	}
}

// waitFor blocks until the page's document reached the lifecycle event
// name, the renderer crashed, or ctx ends.
func (pr *pageRun) waitFor(ctx context.Context, name string) error {
	for {
		pr.mu.Lock()
		done, crashed, ch := pr.events[pr.loader][name], pr.crashed, pr.changed
		pr.mu.Unlock()
		switch {
		case crashed:
			return errCrashed
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

var errCrashed = errors.New("the page's renderer crashed")

// render loads req in the tab and returns the rendered response.
func (t *tab) render(ctx context.Context, req *spider.Request) (res *spider.Response, err error) {
	o := &t.r.opts
	timeout := o.Timeout
	if v, ok := req.GetFloat(MetaTimeout); ok && v > 0 {
		timeout = time.Duration(v * float64(time.Second))
	}
	wait := o.Wait
	if v, ok := req.Get(MetaWait).(string); ok && v != "" {
		if wait, err = parseWait(v); err != nil {
			return nil, &downloader.Error{Kind: errkind.DownloadFailed, URL: req.URL.Redacted(), Err: fmt.Errorf("meta %s: %v", MetaWait, err)}
		}
	}
	sel := o.WaitSelector
	if v, ok := req.Get(MetaWaitSelector).(string); ok {
		sel = v
	}
	shot := o.Screenshot
	if v, ok := req.Get(MetaScreenshot).(bool); ok {
		shot = v
	}
	scroll, _ := req.GetFloat(MetaScroll)
	block3rd := o.BlockThirdParty
	if v, ok := req.Get(MetaThirdParty).(string); ok && v != "" {
		switch strings.ToLower(v) {
		case "block":
			block3rd = true
		case "throttle":
			block3rd = false
		default:
			return nil, &downloader.Error{Kind: errkind.DownloadFailed, URL: req.URL.Redacted(),
				Err: fmt.Errorf("meta %s: %q is not a policy (want throttle or block)", MetaThirdParty, v)}
		}
	}

	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	report := handler.Report(ctx)
	pr := newPageRun(t, rctx, req, report)
	pr.block3rd = block3rd
	capture := downloader.CaptureOf(ctx)
	if o.Archive && capture != nil {
		pr.arc = newArchiveRun(t, o.MaxSize)
	}
	if p, ok := req.Get(downloader.MetaProxy).(string); ok && p != "" {
		if pu, err := url.Parse(p); err == nil {
			pr.proxyUser = pu.User
		}
	}
	t.cur.Store(pr)
	// A chromedp context for the tab's commands, with the render's deadline.
	cctx, ccancel := context.WithTimeout(t.context(), timeout)
	stopOnCancel := context.AfterFunc(ctx, ccancel)
	defer func() {
		if pr.arc != nil {
			// What the browser exchanged, for the archive: even a failed
			// render's exchanges went over the network.
			actx, acancel := context.WithTimeout(context.Background(), archiveWait)
			ex, unfinished := pr.arc.finish(actx)
			acancel()
			capture.AddBrowser(ex...)
			if unfinished > 0 {
				t.r.stats.Inc("render/archive_unfinished", float64(unfinished))
			}
		}
		stopOnCancel()
		ccancel()
		t.cur.Store(nil)
		cancel()
		pr.releaseAll()
		t.reset()
		t.r.stats.Inc("render/pages", 1)
		t.r.stats.Inc("render/seconds", time.Since(start).Seconds())
		if err != nil {
			t.r.stats.Inc("render/errors/"+errkind.Of(err), 1)
		}
	}()
	fail := func(kind *errkind.Kind, e error) error {
		pr.mu.Lock()
		crashed, blocked := pr.crashed, pr.blocked
		pr.mu.Unlock()
		switch {
		case blocked != nil:
			return blocked
		case crashed || t.crashed.Load():
			t.r.stats.Inc("render/renderer_crashes", 1)
			t.r.log.Warn().Str("url", req.URL.Redacted()).Msg("the renderer crashed; the tab is replaced")
			return &downloader.Error{Kind: RendererCrashed, URL: req.URL.Redacted(), Err: errCrashed}
		case ctx.Err() != nil:
			return ctx.Err()
		case rctx.Err() != nil || cctx.Err() != nil || errors.Is(e, context.DeadlineExceeded):
			t.r.stats.Inc("render/timeouts", 1)
			return &downloader.Error{Kind: errkind.DownloadTimeout, URL: req.URL.Redacted(),
				Err: fmt.Errorf("render did not finish within %v (RENDER_TIMEOUT, render_timeout meta): %v", timeout, e)}
		}
		return &downloader.Error{Kind: kind, URL: req.URL.Redacted(), Err: e}
	}

	nav, err := chromedp.Call(cctx, page.Navigate, page.NavigateParams{URL: req.URL.String()})
	if err != nil {
		return nil, fail(errkind.DownloadFailed, err)
	}
	if nav.ErrorText != "" {
		return nil, fail(errkind.DownloadFailed, fmt.Errorf("loading the page: %s", nav.ErrorText))
	}
	pr.mu.Lock()
	if pr.loader == "" {
		pr.loader = nav.LoaderID
	}
	pr.mu.Unlock()
	if err := pr.waitFor(rctx, wait.lifecycle()); err != nil {
		return nil, fail(errkind.DownloadFailed, fmt.Errorf("waiting for %s: %w", wait, err))
	}
	p := &Page{t: t, pr: pr, ctx: cctx}
	if sel != "" {
		if err := p.WaitSelector(sel); err != nil {
			return nil, fail(errkind.DownloadTimeout, err)
		}
	}
	if n := int(scroll); n > 0 {
		if _, err := p.ScrollToBottom(n, scrollPause); err != nil {
			return nil, fail(errkind.DownloadFailed, err)
		}
	}
	if o.Actor != nil {
		if err := o.Actor.PageActions(cctx, p); err != nil {
			return nil, fail(errkind.DownloadFailed, fmt.Errorf("page actions: %w", err))
		}
	}
	var snap struct {
		HTML string `json:"html"`
		URL  string `json:"url"`
	}
	if err := p.EvalInto(`({html: (document.doctype ? "<!DOCTYPE " + document.doctype.name + ">\n" : "") + document.documentElement.outerHTML, url: location.href})`, &snap); err != nil {
		return nil, fail(errkind.DownloadFailed, fmt.Errorf("reading the DOM: %w", err))
	}
	res = &spider.Response{URL: req.URL, Status: http.StatusOK, Header: http.Header{}, Body: []byte(snap.HTML),
		Request: req, Flags: []string{"rendered"}}
	if u, err := url.Parse(snap.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		res.URL = u
	}
	pr.mu.Lock()
	doc := pr.docs[pr.loader]
	if doc == nil {
		doc = pr.docs[nav.LoaderID]
	}
	pr.mu.Unlock()
	if doc != nil {
		res.Status = int(doc.Status)
		res.Header = headers(doc.Headers)
		res.Protocol = doc.Protocol
		res.IP = doc.RemoteIPAddress
	}
	// The body is the DOM serialised as UTF-8, whatever the document was
	// sent as.
	res.Header.Del("Content-Length")
	res.Header.Del("Content-Encoding")
	res.Header.Set("Content-Type", "text/html; charset=utf-8")
	if shot {
		buf, err := chromedp.Run(cctx, chromedp.CaptureScreenshot())
		if err != nil {
			return nil, fail(errkind.DownloadFailed, fmt.Errorf("screenshot: %w", err))
		}
		res.Screenshot = buf
	}
	return res, nil
}

// reset stops whatever the tab still loads, so that nothing of this page
// reaches the network any more (requests it still makes are failed: no
// render is current). The document stays until the next render navigates
// away: a navigation to a blank page in between would make the browser
// swap the tab's renderer process twice per page, which costs more CPU
// than the render itself.
func (t *tab) reset() {
	tctx := t.context()
	if tctx == nil || t.crashed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(tctx, 5*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, page.StopLoading, cdp.Empty{}); err != nil {
		// A tab that cannot even stop is replaced.
		t.crashed.Store(true)
	}
}

// headers converts DevTools headers (several values joined by newlines).
func headers(h network.Headers) http.Header {
	out := http.Header{}
	for k, v := range h {
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
		}
		for _, line := range strings.Split(s, "\n") {
			out.Add(k, line)
		}
	}
	return out
}

// archiveWait bounds how long the end of a render waits for the bodies
// being fetched for the archive.
const archiveWait = 5 * time.Second

// scrollPause is how long the render_scroll meta waits, after each scroll,
// for the page to grow before it concludes the list has ended.
const scrollPause = 3 * time.Second
