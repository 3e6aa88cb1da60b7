package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

// recorder registers downloader and spider middlewares that log what they see.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *recorder) String() string { return strings.Join(r.log, " ") }

var rec = &recorder{}

func init() {
	for _, n := range []string{"testA", "testB", "testC"} {
		RegisterDownloader(n, func(c *spider.Crawler) (Downloader, error) {
			return DownloaderFunc(func(next Fetcher) Fetcher {
				return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
					rec.add(">" + n)
					res, err := next.Fetch(ctx, req)
					rec.add("<" + n)
					return res, err
				})
			}), nil
		})
		RegisterSpider(n, func(c *spider.Crawler) (Spider, error) {
			return SpiderFunc(func(next Handler) Handler {
				return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
					rec.add(">" + n)
					err := next.Handle(ctx, res, &OutputHooks{Next: out, OnItem: func(it any) any {
						rec.add("item@" + n)
						return it
					}})
					rec.add("<" + n)
					return err
				})
			}), nil
		})
	}
	RegisterDownloader("testPanic", func(c *spider.Crawler) (Downloader, error) {
		return DownloaderFunc(func(next Fetcher) Fetcher {
			return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
				panic("boom")
			})
		}), nil
	})
	RegisterDownloader("testFails", func(c *spider.Crawler) (Downloader, error) {
		return DownloaderFunc(func(next Fetcher) Fetcher {
			return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
				if _, err := next.Fetch(ctx, req); err != nil {
					return nil, err // passed on: not this middleware's error
				}
				return nil, errors.New("cannot parse the answer")
			})
		}), nil
	})
	RegisterDownloader("testNil", func(c *spider.Crawler) (Downloader, error) {
		return DownloaderFunc(func(next Fetcher) Fetcher {
			return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) { return nil, nil })
		}), nil
	})
	RegisterDownloader("testBuildFails", func(c *spider.Crawler) (Downloader, error) {
		return nil, errors.New("missing API key")
	})
	RegisterDownloader("testOldClose", func(c *spider.Crawler) (Downloader, error) { return oldCloser{}, nil })
}

// oldCloser has the Close method of earlier releases, which the chain
// would no longer call.
type oldCloser struct{}

func (oldCloser) WrapFetcher(next Fetcher) Fetcher { return next }
func (oldCloser) Close() error                     { return nil }

func TestDownloaderChainOrder(t *testing.T) {
	c, _ := newCrawler(t, nil, only(map[string]any{
		"DOWNLOADER_MIDDLEWARES": map[string]any{"testA": 300, "testB": 100, "testC": 200, "UserAgent": nil},
	}, "UserAgent"))
	rec = &recorder{}
	ch := chainFor(t, c, statusFetcher(200, nil))
	if got, want := strings.Join(ch.Names(), ","), "testB,testC,testA"; got != want {
		t.Errorf("names = %s, want %s", got, want)
	}
	if _, err := ch.Fetch(context.Background(), spider.MustRequest("http://127.0.0.1/", nil)); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.String(), ">testB >testC >testA <testA <testC <testB"; got != want {
		t.Errorf("calls = %q, want %q", got, want)
	}
}

func TestSpiderChainOrderSeesOutput(t *testing.T) {
	c, _ := newCrawler(t, nil, map[string]any{
		"SPIDER_MIDDLEWARES_BASE": map[string]any{},
		"SPIDER_MIDDLEWARES":      map[string]any{"testA": 10, "testB": 20},
	})
	rec = &recorder{}
	cbErr := errors.New("callback failed")
	h, names, err := BuildSpider(c, HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		rec.add("callback")
		out.Item("x")
		return cbErr
	}))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != "[testA testB]" {
		t.Errorf("names = %v", names)
	}
	var out spider.Recorder
	req := spider.MustRequest("http://127.0.0.1/", nil)
	err = h.Handle(context.Background(), &spider.Response{URL: req.URL, Status: 200, Request: req}, &out)
	if err != cbErr {
		t.Errorf("error = %v, want the callback's own error, unwrapped", err)
	}
	if got, want := rec.String(), ">testA >testB callback item@testB item@testA <testB <testA"; got != want {
		t.Errorf("calls = %q, want %q", got, want)
	}
	if len(out.Items) != 1 {
		t.Errorf("items = %v", out.Items)
	}
}

func TestOrderedErrorsNameTheEntry(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]any
		want string
	}{
		{"unknown name", map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"Retyr": 500}}, `DOWNLOADER_MIDDLEWARES: entry "Retyr" is not a registered component`},
		{"order not a number", map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"Retry": "first"}}, `DOWNLOADER_MIDDLEWARES: entry "Retry": order must be an integer or null`},
		{"order not an integer", map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"Retry": 1.5}}, `entry "Retry": order must be an integer or null`},
		{"spider side", map[string]any{"SPIDER_MIDDLEWARES": map[string]any{"Nope": 1}}, `SPIDER_MIDDLEWARES: entry "Nope" is not a registered component`},
		{"factory fails", map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"testBuildFails": 1}}, "DOWNLOADER_MIDDLEWARES: testBuildFails: missing API key"},
		{"Close without a context", map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"testOldClose": 1}}, "DOWNLOADER_MIDDLEWARES: testOldClose: its Close method must be Close(ctx context.Context) error"},
		{"bad setting of a built-in", map[string]any{"RETRY_EXCEPTIONS": []string{"NoSuchError"}}, `Retry: RETRY_EXCEPTIONS: unknown error kind "NoSuchError"`},
		{"bad policy", map[string]any{"REFERRER_POLICY": "sometimes"}, `unknown referrer policy "sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCrawler(t, nil, tt.set)
			_, err := NewDownloaderChain(c, statusFetcher(200, nil))
			if err == nil {
				_, _, err = BuildSpider(c, HandlerFunc(func(context.Context, *spider.Response, spider.Output) error { return nil }))
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestNullOrderDisablesBuiltin(t *testing.T) {
	c, _ := newCrawler(t, nil, map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"UserAgent": nil}})
	ch := chainFor(t, c, statusFetcher(200, nil))
	for _, n := range ch.Names() {
		if n == "UserAgent" {
			t.Fatalf("UserAgent still enabled: %v", ch.Names())
		}
	}
	if len(ch.Names()) == 0 {
		t.Fatal("no built-in enabled")
	}
}

func TestGuardNamesMiddlewareAndRequest(t *testing.T) {
	dlErr := &downloader.Error{Kind: errkind.DownloadFailed, URL: "x", Err: errors.New("refused")}
	failing := FetcherFunc(func(context.Context, *spider.Request) (*spider.Response, error) { return nil, dlErr })
	tests := []struct {
		name      string
		mw        string
		inner     Fetcher
		wantMsg   string
		wantStat  string
		passedOn  error
		wantPanic bool
	}{
		{name: "panic", mw: "testPanic", inner: statusFetcher(200, nil), wantMsg: "middleware testPanic panicked on GET http://127.0.0.1/secret: boom", wantStat: "middleware/panic_count/testPanic", wantPanic: true},
		{name: "own error", mw: "testFails", inner: statusFetcher(200, nil), wantMsg: "middleware testFails failed on GET http://127.0.0.1/secret: cannot parse the answer", wantStat: "middleware/error_count/testFails"},
		{name: "passed-on error is not attributed", mw: "testFails", inner: failing, passedOn: dlErr},
		{name: "nil response and nil error", mw: "testNil", inner: statusFetcher(200, nil), wantMsg: "middleware testNil failed", wantStat: "middleware/error_count/testNil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCrawler(t, nil, only(map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{tt.mw: 10}}))
			ch := chainFor(t, c, tt.inner)
			_, err := ch.Fetch(context.Background(), spider.MustRequest("http://127.0.0.1/secret", nil))
			if tt.passedOn != nil {
				if err != tt.passedOn {
					t.Fatalf("error = %#v, want the download error itself", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error = %v, want %q", err, tt.wantMsg)
			}
			var pe *PanicError
			if errors.As(err, &pe) != tt.wantPanic {
				t.Errorf("PanicError = %v, want %v", errors.As(err, &pe), tt.wantPanic)
			}
			if c.Stats.Get(tt.wantStat) != 1 {
				t.Errorf("%s = %v, want 1", tt.wantStat, c.Stats.Get(tt.wantStat))
			}
		})
	}
}

func TestRedactedRequest(t *testing.T) {
	r := spider.MustRequest("http://user:hunter2@127.0.0.1/p", nil)
	if got := RedactedRequest(r); strings.Contains(got, "hunter2") || !strings.Contains(got, "user:xxxxx@") {
		t.Errorf("RedactedRequest = %q", got)
	}
}

// pdfHook drops PDF links: the hook of TestOutputHooksFollowAndDrop for
// the built-in middlewares' hooked outputs.
type pdfHook struct{}

func (pdfHook) onRequest(r *spider.Request) *spider.Request {
	if strings.HasSuffix(r.URL.Path, ".pdf") {
		return nil
	}
	return r
}

// OutputHooks (for user middlewares) and hooked (the built-in ones) pass
// items on, hook every request, including those of Follow and FollowAll,
// and leave invalid links to the next Output, which reports them.
func TestOutputHooksFollowAndDrop(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(next spider.Output) spider.Output
	}{
		{"OutputHooks", func(next spider.Output) spider.Output {
			return &OutputHooks{Next: next, OnRequest: pdfHook{}.onRequest}
		}},
		{"hooked", func(next spider.Output) spider.Output { return hook(next, pdfHook{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := spider.MustRequest("http://127.0.0.1/dir/", nil)
			res := &spider.Response{URL: req.URL, Status: 200, Request: req, Header: http.Header{}}
			var out spider.Recorder
			h := tc.wrap(&out)
			h.Follow(res, "a.html", nil)
			for _, ref := range []string{"b.pdf", "c.html", "mailto:x@y"} {
				h.Follow(res, ref, nil)
			}
			h.Request(nil)
			h.Request(spider.MustRequest("http://127.0.0.1/d.pdf", nil))
			h.Item("an item")
			if len(out.Requests) != 2 || out.Requests[0].URL.String() != "http://127.0.0.1/dir/a.html" || out.Requests[1].URL.Path != "/dir/c.html" {
				t.Errorf("requests = %v", out.Requests)
			}
			if len(out.Errors) != 1 {
				t.Errorf("invalid links reported = %v, want the mailto link", out.Errors)
			}
			if out.Requests[0].Depth != 1 {
				t.Errorf("depth = %d, want 1", out.Requests[0].Depth)
			}
			if len(out.Items) != 1 || out.Items[0] != "an item" {
				t.Errorf("items = %v", out.Items)
			}
		})
	}
}

type answerAll struct{ Downloader }

func (answerAll) WillAnswer(context.Context, *spider.Request) bool { return true }

func TestAnswerOfflineAndOfflineMiss(t *testing.T) {
	RegisterDownloader("testAnswers", func(c *spider.Crawler) (Downloader, error) {
		return answerAll{DownloaderFunc(func(next Fetcher) Fetcher { return next })}, nil
	})
	c, _ := newCrawler(t, nil, only(map[string]any{"DOWNLOADER_MIDDLEWARES": map[string]any{"testAnswers": 1}}))
	ch := chainFor(t, c, statusFetcher(200, nil))
	req := spider.MustRequest("http://127.0.0.1/", nil)
	if !ch.AnswerOffline(context.Background(), req) || req.Get(MetaOffline) != true {
		t.Fatalf("AnswerOffline = false or request not marked: %v", req.Meta)
	}
	miss := OfflineMiss(req)
	if miss == nil || len(miss.Requests) != 1 || miss.Requests[0].Get(MetaOffline) != false || !miss.Requests[0].DontFilter {
		t.Fatalf("OfflineMiss = %+v", miss)
	}
	if ch.AnswerOffline(context.Background(), miss.Requests[0]) {
		t.Error("a request whose offline promise failed was promised again")
	}
	if OfflineMiss(spider.MustRequest("http://127.0.0.1/", nil)) != nil {
		t.Error("OfflineMiss for an ordinary request")
	}
}
