package render

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// tabStartTimeout bounds the creation of a tab in a running browser.
const tabStartTimeout = 30 * time.Second

// tab is one browser tab, reused page after page. Its DevTools events go
// to the page being rendered (cur); between renders there is none, and
// any request the tab still makes is failed.
type tab struct {
	id   int
	r    *Renderer
	proc *process
	gen  int // generation of proc the target belongs to

	// ctx is the tab's chromedp context (nil: no target). The holder of
	// the tab sets it; event handlers read it, hence the lock.
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	frame  cdp.FrameID // the main frame (the target id)
	proxy  string      // the proxy of the tab's browser context ("" none)

	cur     atomic.Pointer[pageRun]
	crashed atomic.Bool
}

// prepare makes sure the tab's browser runs and the tab has a live target
// whose traffic goes through proxy (scheme://host:port, "" for none),
// restarting the browser when it died or is due for a restart.
func (t *tab) prepare(proxy string) error {
	p := t.proc
	p.mu.Lock()
	if p.ctx != nil && p.ctx.Err() != nil {
		// chromedp ends the browser's context when the process exits.
		t.r.markDeadLocked(p)
	}
	if p.ctx == nil || p.dead || (p.stale && p.busy == 0) {
		if p.ctx != nil {
			p.stopLocked()
			t.r.stats.Inc("render/browser_restarts", 1)
		}
		if err := p.startLocked(); err != nil {
			p.mu.Unlock()
			return err
		}
	}
	p.busy++
	gen, bctx := p.gen, p.ctx
	p.mu.Unlock()
	if t.context() != nil && t.gen == gen && !t.crashed.Load() && t.proxy == proxy {
		return nil
	}
	t.close()
	if err := t.open(bctx, proxy); err != nil {
		// A browser killed a moment ago may not have ended its context
		// yet: when it no longer answers, mark it dead so that the next
		// render restarts it instead of failing the same way.
		alive := p.alive(context.Background())
		p.mu.Lock()
		p.busy--
		if !alive && p.gen == gen {
			t.r.markDeadLocked(p)
		}
		p.mu.Unlock()
		return err
	}
	t.gen = gen
	return nil
}

// open creates the tab's target in the browser of bctx, with request
// interception on. With a proxy the tab gets a browser context of its own
// (separate cookies and cache) whose every request, loopback ones
// included, goes through the proxy; the proxy's credentials are given
// when it asks (auth).
func (t *tab) open(bctx context.Context, proxy string) error {
	opts := []chromedp.ContextOption{chromedp.WithListener(t.onEvent)}
	if proxy != "" {
		opts = append(opts, chromedp.WithNewBrowserContext(func(p *target.CreateBrowserContextParams) {
			p.ProxyServer = proxy
			p.ProxyBypassList = "<-loopback>"
		}))
	}
	tctx, cancel := chromedp.NewContext(bctx, opts...)
	done := make(chan error, 1)
	go func() {
		err := chromedp.Do(tctx)
		if err == nil {
			_, err = chromedp.Call(tctx, fetch.Enable, fetch.EnableParams{
				Patterns:           []*fetch.RequestPattern{{URLPattern: "*"}},
				HandleAuthRequests: new(true),
			})
		}
		if err == nil && t.r.opts.Archive {
			// Archiving: the browser keeps the bodies until they are
			// fetched, and reports request bodies.
			total, resource := archiveBuffers(t.r.opts.MaxSize)
			_, err = chromedp.Call(tctx, network.Enable, network.EnableParams{
				MaxTotalBufferSize: &total, MaxResourceBufferSize: &resource, MaxPostDataSize: &resource,
			})
		}
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(tabStartTimeout):
		err = errors.New("the browser did not open a tab in time")
	}
	if err != nil {
		cancel()
		return fmt.Errorf("opening a tab: %w", err)
	}
	t.mu.Lock()
	t.ctx, t.cancel = tctx, cancel
	t.mu.Unlock()
	t.proxy = proxy
	t.frame = cdp.FrameID(chromedp.FromContext(tctx).Target.TargetID)
	t.crashed.Store(false)
	t.r.stats.Inc("render/tabs_opened", 1)
	return nil
}

// close closes the tab's target, if any.
func (t *tab) close() {
	t.mu.Lock()
	cancel := t.cancel
	t.ctx, t.cancel = nil, nil
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// context returns the tab's chromedp context, nil when it has no target.
func (t *tab) context() context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ctx
}

// onEvent receives every event of the tab, in order, on the tab's reading
// goroutine: it must not block or send commands, so requests are handled
// on goroutines of their own.
func (t *tab) onEvent(ev any) {
	pr := t.cur.Load()
	switch ev := ev.(type) {
	case *fetch.EventRequestPaused:
		go t.paused(pr, ev)
	case *fetch.EventAuthRequired:
		go t.auth(pr, ev)
	case *inspector.EventTargetCrashed:
		t.crashed.Store(true)
		if pr != nil {
			pr.crash()
		}
	}
	if pr == nil {
		return
	}
	if pr.arc != nil {
		pr.arc.event(ev)
	}
	switch ev := ev.(type) {
	case *page.EventLifecycleEvent:
		if ev.FrameID == t.frame {
			pr.lifecycle(ev.LoaderID, ev.Name)
		}
	case *network.EventResponseReceived:
		pr.response(ev)
	case *network.EventLoadingFinished:
		pr.finished(ev.RequestID, false)
	case *network.EventLoadingFailed:
		pr.finished(ev.RequestID, !ev.Canceled)
	}
}

// fail fails a paused request, and resume lets it go on; both are bounded
// in time, and fail's errors are ignored (the request may be gone with its
// page).
func (t *tab) fail(id fetch.RequestID, reason network.ErrorReason) {
	ctx, cancel := context.WithTimeout(t.ctxOrBackground(), probeTimeout)
	defer cancel()
	_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: id, ErrorReason: reason})
}

func (t *tab) resume(id fetch.RequestID) error {
	ctx, cancel := context.WithTimeout(t.ctxOrBackground(), probeTimeout)
	defer cancel()
	_, err := chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
	return err
}

func (t *tab) ctxOrBackground() context.Context {
	if c := t.context(); c != nil {
		return c
	}
	return context.Background()
}

// auth answers a proxy's authentication challenge with the credentials of
// the page's proxy, and cancels any other challenge (gocrawl sends server
// credentials itself, never through a browser dialog).
func (t *tab) auth(pr *pageRun, ev *fetch.EventAuthRequired) {
	resp := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
	if pr != nil && ev.AuthChallenge != nil && ev.AuthChallenge.Source == fetch.AuthChallengeSourceProxy && pr.proxyUser != nil {
		pass, _ := pr.proxyUser.Password()
		resp = &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
			Username: pr.proxyUser.Username(), Password: pass}
	}
	ctx, cancel := context.WithTimeout(t.ctxOrBackground(), probeTimeout)
	defer cancel()
	_, _ = chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: resp})
}
