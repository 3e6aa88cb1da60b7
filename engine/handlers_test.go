package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/downloader/handler"
	"github.com/gocrawl/gocrawl/spider"
)

// The engine's tests link no renderer (package render registers it when
// imported): these check what a program without one does when a crawl
// asks for rendering.

// TestRenderSettingsWithoutRendererFailAtStart checks that RENDER_JS and
// RENDER_SCOPES in a program without a renderer stop the crawl in New,
// naming the setting and the package to import.
func TestRenderSettingsWithoutRendererFailAtStart(t *testing.T) {
	if _, ok := handler.Lookup(handler.Render); ok {
		t.Fatal("the engine's tests link a renderer; this test needs a program without one")
	}
	for _, tc := range []struct {
		setting string
		value   any
	}{
		{"RENDER_JS", true},
		{"RENDER_SCOPES", []any{"app.example.com"}},
	} {
		_, err := New(newURLsSpider(), testSettings(t, tc.setting, tc.value), Options{})
		if !errors.Is(err, handler.ErrNotLinked) {
			t.Fatalf("%s: New error %v, want one wrapping handler.ErrNotLinked", tc.setting, err)
		}
		for _, want := range []string{tc.setting, handler.RenderImport} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not name %s", tc.setting, err, want)
			}
		}
	}
}

// renderMetaSpider asks for one page rendered (the render meta) and one
// not, and records what its errback got.
type renderMetaSpider struct {
	base   string
	mu     sync.Mutex
	errs   map[string]error
	parsed []string
}

func (*renderMetaSpider) Name() string { return "render-meta" }

func (s *renderMetaSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for _, path := range []string{"/rendered", "/plain"} {
			req := spider.MustRequest(s.base+path, s.Parse)
			req.Errback = s.OnError
			if path == "/rendered" {
				req.Set(handler.MetaRender, true)
			}
			if !yield(req, nil) {
				return
			}
		}
	}
}

func (s *renderMetaSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.mu.Lock()
	s.parsed = append(s.parsed, res.URL.Path)
	s.mu.Unlock()
	return nil
}

func (s *renderMetaSpider) OnError(ctx context.Context, req *spider.Request, err error, out spider.Output) error {
	s.mu.Lock()
	s.errs[req.URL.Path] = err
	s.mu.Unlock()
	return nil
}

// TestRenderMetaWithoutRendererFailsTheRequest checks that a request with
// the render meta in a program without a renderer fails alone, its
// errback told what to import, while the rest of the crawl goes on.
func TestRenderMetaWithoutRendererFailsTheRequest(t *testing.T) {
	checkGoroutines(t)
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, pageHTML(0))
	}))
	sp := &renderMetaSpider{base: srv.URL, errs: map[string]error{}}
	e, err := New(sp, testSettings(t, "RETRY_ENABLED", false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h := e.Handler(handler.Render); h != nil {
		t.Fatalf("Handler(render) = %T in a program without a renderer", h)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sp.errs["/rendered"]; !errors.Is(err, handler.ErrNotLinked) || !strings.Contains(err.Error(), handler.RenderImport) {
		t.Errorf("errback of the rendered request got %v, want an error wrapping handler.ErrNotLinked naming the import", err)
	}
	if len(sp.parsed) != 1 || sp.parsed[0] != "/plain" {
		t.Errorf("parsed %v, want the plain request only", sp.parsed)
	}
}
