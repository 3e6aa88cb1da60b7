package render

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/testproxy"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// The tests of this package share one renderer (one browser process, two
// tabs): starting Chromium is the slow part. Tests that need other options
// (third-party blocking) make their own.
var (
	shared      *Renderer
	sharedThr   switchThrottler
	sharedActor actorFunc
)

func TestMain(m *testing.M) {
	if _, err := FindBrowser(""); err != nil {
		fmt.Fprintln(os.Stderr, "render tests need Chromium (scripts/test.sh installs it):", err)
		os.Exit(1)
	}
	var err error
	shared, err = New(Options{Tabs: 2, Timeout: 10 * time.Second, BlockTypes: []string{"Image", "Font", "Media"},
		Throttler: &sharedThr, Actor: &sharedActor})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = shared.Close()
	os.Exit(code)
}

// switchThrottler lets each test give the shared renderer its own
// throttler (nil: subresources are not throttled).
type switchThrottler struct {
	inner atomic.Pointer[throttling.Throttler]
	// seen, when set, records the scopes given to each URL path.
	seen atomic.Pointer[scopeLog]
}

type scopeLog struct {
	mu     sync.Mutex
	scopes map[string]string
}

func (l *scopeLog) get(path string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.scopes[path]
}

func (s *switchThrottler) Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error) {
	sc := throttling.Scopes{{Name: req.Host()}}
	if t := s.inner.Load(); t != nil {
		var err error
		if sc, err = t.Scopes(ctx, req); err != nil {
			return nil, err
		}
	}
	if l := s.seen.Load(); l != nil {
		l.mu.Lock()
		l.scopes[req.URL.Path] = fmt.Sprint(sc.Names())
		l.mu.Unlock()
	}
	return sc, nil
}

func (s *switchThrottler) Admit(ctx context.Context, sc throttling.Scopes) (time.Time, error) {
	if t := s.inner.Load(); t != nil {
		return t.Admit(ctx, sc)
	}
	return time.Now(), nil
}

func (s *switchThrottler) Done(ctx context.Context, req *spider.Request, sc throttling.Scopes, sentAt time.Time, res *spider.Response, err error) {
	if t := s.inner.Load(); t != nil {
		t.Done(ctx, req, sc, sentAt, res, err)
	}
}

// actorFunc is the shared renderer's PageActor: the test's function, if any.
type actorFunc struct {
	mu sync.Mutex
	fn func(ctx context.Context, p *Page) error
}

func (a *actorFunc) set(fn func(ctx context.Context, p *Page) error) {
	a.mu.Lock()
	a.fn = fn
	a.mu.Unlock()
}

func (a *actorFunc) PageActions(ctx context.Context, p *Page) error {
	a.mu.Lock()
	fn := a.fn
	a.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(ctx, p)
}

func writePage(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, "<!DOCTYPE html><html><head><title>t</title></head><body>"+body+"</body></html>")
}

func render1(t *testing.T, u string, meta map[string]any) (*spider.Response, error) {
	t.Helper()
	req := spider.MustRequest(u, nil)
	for k, v := range meta {
		req.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return shared.Fetch(ctx, req)
}

func TestScriptBuiltContent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Served-By", "test")
		w.WriteHeader(http.StatusNonAuthoritativeInfo)
		writePage(w, `<ul id="list"></ul><script>
window.addEventListener("load", () => {
  for (const n of ["alpha", "beta", "gamma"]) {
    const li = document.createElement("li"); li.className = "item"; li.textContent = n;
    document.getElementById("list").appendChild(li);
  }
});</script>`)
	}))
	defer srv.Close()
	res, err := render1(t, srv.URL+"/page", nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := res.Doc()
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Find("li.item").Length(); got != 3 {
		t.Fatalf("rendered DOM has %d script-built items, want 3:\n%s", got, res.Body)
	}
	if res.Status != http.StatusNonAuthoritativeInfo || res.Header.Get("X-Served-By") != "test" {
		t.Errorf("status %d, headers %v: want the main document's 203 and X-Served-By", res.Status, res.Header)
	}
	if res.URL.String() != srv.URL+"/page" || !strings.Contains(strings.Join(res.Flags, ","), "rendered") {
		t.Errorf("URL %s flags %v", res.URL, res.Flags)
	}
}

func TestWaitForSelectorAfterDelay(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writePage(w, `<script>setTimeout(() => {
  const d = document.createElement("div"); d.id = "late"; d.textContent = "arrived";
  document.body.appendChild(d);
}, `+r.URL.Query().Get("ms")+`);</script>`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		ms   int
		meta map[string]any
		want bool
	}{
		// Control: the render does not wait by itself (content 5 s late).
		{"load only", 5000, nil, false},
		{"wait for #late", 500, map[string]any{MetaWaitSelector: "#late"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := render1(t, fmt.Sprintf("%s/?ms=%d", srv.URL, tc.ms), tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(res.Body), `<div id="late">arrived</div>`); got != tc.want {
				t.Errorf("late content present = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("selector never appears", func(t *testing.T) {
		_, err := render1(t, srv.URL, map[string]any{MetaWaitSelector: "#never", MetaTimeout: 1.5})
		if !errors.Is(err, errkind.DownloadTimeout) {
			t.Fatalf("err = %v, want a DownloadTimeoutError", err)
		}
	})
}

// infinite serves a list that grows by 10 items each time the page scrolls
// near its bottom, fetched from the same host (so through throttling).
func infinite() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writePage(w, `<div id="feed"></div><script>
let page = 0, loading = false;
async function more() {
  loading = true;
  const items = await (await fetch("/items?page=" + page++)).json();
  for (const it of items) {
    const d = document.createElement("div"); d.className = "item"; d.style.height = "200px"; d.textContent = it;
    document.getElementById("feed").appendChild(d);
  }
  loading = false;
}
window.addEventListener("scroll", () => {
  if (!loading && window.innerHeight + window.scrollY >= document.body.scrollHeight - 50) more();
});
more();
</script>`)
	})
	mux.HandleFunc("/items", func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Query().Get("page")
		w.Header().Set("Content-Type", "application/json")
		var items []string
		for i := range 10 {
			items = append(items, fmt.Sprintf(`"item %s-%d"`, p, i))
		}
		fmt.Fprint(w, "["+strings.Join(items, ",")+"]")
	})
	return mux
}

func TestInfiniteScrollSpiderAction(t *testing.T) {
	srv := httptest.NewServer(infinite())
	defer srv.Close()
	count := func(res *spider.Response) int {
		doc, err := res.Doc()
		if err != nil {
			t.Fatal(err)
		}
		return doc.Find(".item").Length()
	}
	// The first batch arrives after load: wait for it in every case.
	meta := map[string]any{MetaWaitSelector: ".item"}
	res, err := render1(t, srv.URL, meta)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(res); n != 10 {
		t.Fatalf("without scrolling: %d items, want 10", n)
	}
	var scrolled atomic.Int32
	sharedActor.set(func(ctx context.Context, p *Page) error {
		if p.Request().Get("scroll_feed") == nil {
			return nil
		}
		scrolled.Add(1)
		_, err := p.ScrollToBottom(3, 3*time.Second)
		return err
	})
	defer sharedActor.set(nil)
	res, err = render1(t, srv.URL, map[string]any{MetaWaitSelector: ".item", "scroll_feed": true})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(res); n != 40 || scrolled.Load() != 1 {
		t.Fatalf("after the spider's action scrolled 3 times: %d items (action ran %d times), want 40", n, scrolled.Load())
	}
	// The built-in render_scroll meta does the same without Go code.
	res, err = render1(t, srv.URL, map[string]any{MetaWaitSelector: ".item", MetaScroll: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(res); n != 30 {
		t.Fatalf("render_scroll 2: %d items, want 30", n)
	}
}

func TestNeverFinishingPageTimesOutAndTabIsReused(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			writePage(w, `<p id="ok">fine</p>`)
			return
		}
		// The document starts, then never ends: no load event ever.
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body><p>loading forever")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	// Warm both tabs so that the count of tabs opened is settled.
	for range 2 {
		if _, err := render1(t, srv.URL+"/ok", nil); err != nil {
			t.Fatal(err)
		}
	}
	opened := shared.stats.Get("render/tabs_opened")
	start := time.Now()
	_, err := render1(t, srv.URL+"/hang", map[string]any{MetaTimeout: 1.0})
	if !errors.Is(err, errkind.DownloadTimeout) {
		t.Fatalf("err = %v, want a DownloadTimeoutError", err)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("the timeout of 1 s took %v", el)
	}
	for range 3 {
		res, err := render1(t, srv.URL+"/ok", nil)
		if err != nil || !strings.Contains(string(res.Body), "fine") {
			t.Fatalf("after the timeout: %v", err)
		}
	}
	if got := shared.stats.Get("render/tabs_opened"); got != opened {
		t.Errorf("tabs opened went from %v to %v: the tab of the timed-out page was not reused", opened, got)
	}
}

func TestSubresourcesHoldHostConcurrency(t *testing.T) {
	var cur, peak, served, others atomic.Int32
	var imgs atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if r.URL.Path != "/" {
			others.Add(1)
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/r/"):
			served.Add(1)
			time.Sleep(20 * time.Millisecond)
			fmt.Fprint(w, "{}")
		case r.URL.Path == "/pic.png":
			imgs.Add(1)
		default:
			writePage(w, `<img src="/pic.png"><script>
Promise.all([...Array(100).keys()].map(i => fetch("/r/" + i))).then(() => {
  const d = document.createElement("div"); d.id = "done"; document.body.appendChild(d);
});</script>`)
		}
	}))
	defer srv.Close()

	run := func(t *testing.T, limit int) (int32, float64) {
		peak.Store(0)
		served.Store(0)
		others.Store(0)
		before := shared.stats.Get("render/subresources/admitted")
		if limit > 0 {
			s := settings.New()
			_ = s.Set("CONCURRENT_REQUESTS_PER_DOMAIN", limit, settings.SourceCommandLine, "test")
			thr, err := throttling.New(s, throttling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sharedThr.inner.Store(thr)
			defer sharedThr.inner.Store(nil)
		}
		res, err := render1(t, srv.URL, map[string]any{MetaWaitSelector: "#done"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(res.Body), `id="done"`) || served.Load() != 100 {
			t.Fatalf("%d of 100 subresources served", served.Load())
		}
		return peak.Load(), shared.stats.Get("render/subresources/admitted") - before
	}
	// Control: without throttling the browser opens several connections
	// to the host at once (the measurement can see a breach).
	p, _ := run(t, 0)
	t.Logf("peak without throttling: %d requests at once", p)
	p, admitted := run(t, 3)
	if p > 3 {
		t.Errorf("server saw %d requests at once; CONCURRENT_REQUESTS_PER_DOMAIN is 3", p)
	}
	// Every request the server saw besides the page was admitted (the 100
	// fetches, and whatever else the browser asks for, such as a favicon).
	if admitted != float64(others.Load()) || admitted < 100 {
		t.Errorf("render/subresources/admitted grew by %v; the server saw %d subresource requests", admitted, others.Load())
	}
	if imgs.Load() != 0 || shared.stats.Get("render/subresources/blocked/Image") < 1 {
		t.Errorf("the image was requested %d times (blocked count %v); images are blocked", imgs.Load(), shared.stats.Get("render/subresources/blocked/Image"))
	}
}

func TestBrowserKilledIsRestarted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writePage(w, "<p>x</p>") }))
	defer srv.Close()
	if _, err := render1(t, srv.URL, nil); err != nil {
		t.Fatal(err)
	}
	pids := shared.PIDs()
	if len(pids) != 1 {
		t.Fatalf("pids %v", pids)
	}
	restarts := shared.stats.Get("render/browser_restarts")
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ok := 0
	for range 4 {
		if _, err := render1(t, srv.URL, nil); err == nil {
			ok++
		}
	}
	if ok < 3 {
		t.Errorf("only %d of 4 renders after the browser was killed succeeded", ok)
	}
	if shared.stats.Get("render/browser_restarts") <= restarts {
		t.Error("the browser was not restarted")
	}
}

func TestNoBrowser(t *testing.T) {
	_, err := New(Options{BrowserPath: "/nonexistent/chromium"})
	if !errors.Is(err, ErrNoBrowser) || !strings.Contains(err.Error(), "RENDER_BROWSER_PATH") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err = FindBrowser("")
	for _, want := range []string{"apt-get install chromium", "RENDER_BROWSER_PATH"} {
		if !errors.Is(err, ErrNoBrowser) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %q", err, want)
		}
	}
}

func TestOptionsFromSettings(t *testing.T) {
	for _, tc := range []struct {
		name, setting string
		value         any
		want          string
	}{
		{"wait", "RENDER_WAIT", "idle", "RENDER_WAIT"},
		{"third party", "RENDER_THIRD_PARTY", "allow", "RENDER_THIRD_PARTY"},
		{"tabs", "BROWSER_CONCURRENCY", 0, "BROWSER_CONCURRENCY"},
		{"processes", "RENDER_BROWSER_PROCESSES", 5, "RENDER_BROWSER_PROCESSES"},
		{"types", "RENDER_BLOCK_RESOURCE_TYPES", []any{"Imagez"}, "Imagez"},
		{"ok", "RENDER_WAIT", "networkidle", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settings.New()
			if err := s.Set(tc.setting, tc.value, settings.SourceCommandLine, "test"); err != nil {
				t.Fatal(err)
			}
			_, err := OptionsFromSettings(s)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name %s", err, tc.want)
			}
		})
	}
}

func TestRenderThroughProxy(t *testing.T) {
	var direct atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Proxy") == "" {
			direct.Add(1)
		}
		if r.URL.Path == "/data" {
			fmt.Fprint(w, `"from the proxy"`)
			return
		}
		writePage(w, `<p id="out"></p><script>fetch("/data").then(r => r.json()).then(v => { document.getElementById("out").textContent = v })</script>`)
	}))
	defer srv.Close()
	px, err := testproxy.Start(&testproxy.Proxy{Name: "p", User: "crawler", Pass: "pw-123"})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	res, err := render1(t, srv.URL+"/page", map[string]any{"proxy": px.URL(), MetaWaitSelector: "#out:not(:empty)"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Body), "from the proxy") {
		t.Errorf("body:\n%s", res.Body)
	}
	if direct.Load() != 0 {
		t.Errorf("%d requests of the rendered page bypassed the proxy", direct.Load())
	}
	var got []string
	for _, e := range px.Log() {
		if e.Status == http.StatusOK {
			got = append(got, strings.TrimPrefix(e.Target, srv.URL))
		}
	}
	if !slices.Contains(got, "/page") || !slices.Contains(got, "/data") {
		t.Errorf("the proxy carried %v, want the page and its fetch", got)
	}
}

func TestThirdPartySubresources(t *testing.T) {
	var cdnHits atomic.Int32
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cdnHits.Add(1)
		w.Header().Set("Content-Type", "application/javascript")
		fmt.Fprint(w, `document.body.dataset.cdn = "loaded"`)
	}))
	defer cdn.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writePage(w, `<script src="`+cdn.URL+`/lib.js"></script>`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		policy string
		hits   int32
	}{{"throttle", 1}, {"block", 0}} {
		t.Run(tc.policy, func(t *testing.T) {
			cdnHits.Store(0)
			third := shared.stats.Get("render/subresources/third_party")
			blocked := shared.stats.Get("render/subresources/blocked/third_party")
			res, err := render1(t, srv.URL, map[string]any{MetaThirdParty: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			loaded := strings.Contains(string(res.Body), `data-cdn="loaded"`)
			if cdnHits.Load() != tc.hits || loaded != (tc.hits == 1) {
				t.Errorf("the other host got %d requests (script ran: %v), want %d", cdnHits.Load(), loaded, tc.hits)
			}
			if tc.hits == 1 && shared.stats.Get("render/subresources/third_party") != third+1 {
				t.Error("render/subresources/third_party did not count the other host's script")
			}
			if tc.hits == 0 && shared.stats.Get("render/subresources/blocked/third_party") != blocked+1 {
				t.Error("render/subresources/blocked/third_party did not count the blocked script")
			}
		})
	}
}

// The render path follows the crawl's scope rule: a browser-followed
// redirect of the page keeps the page's throttling_scopes meta, which is
// its whole set of scopes (no host scope added), while the page's
// subresources are admitted under their own host's scope.
func TestRenderRedirectKeepsMetaScopes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, "/hop", http.StatusFound)
		case "/hop":
			http.Redirect(w, r, "/landing", http.StatusFound)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `document.body.appendChild(Object.assign(document.createElement("div"), {id: "done"}));`)
		default:
			writePage(w, `<script src="/app.js"></script>`)
		}
	}))
	defer srv.Close()
	thr, err := throttling.New(settings.New(), throttling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := &scopeLog{scopes: map[string]string{}}
	sharedThr.inner.Store(thr)
	sharedThr.seen.Store(log)
	defer func() { sharedThr.inner.Store(nil); sharedThr.seen.Store(nil) }()
	res, err := render1(t, srv.URL+"/start", map[string]any{throttling.MetaScopes: "api", MetaWaitSelector: "#done"})
	if err != nil {
		t.Fatal(err)
	}
	if res.URL.Path != "/landing" {
		t.Fatalf("rendered %s, want the redirect's /landing", res.URL)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tt := range []struct{ path, want string }{
		{"/hop", "[api]"},
		{"/landing", "[api]"},
		{"/app.js", "[" + host + "]"},
	} {
		if got := log.get(tt.path); got != tt.want {
			t.Errorf("%s admitted with scopes %q, want %q", tt.path, got, tt.want)
		}
	}
}
