package render_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

// TestGracefulStopCutsRenderAfterGrace: a render still loading when a
// graceful stop begins gets SHUTDOWN_GRACE, then is cancelled and its
// request kept queued, like a plain HTTP download; it does not hold the
// crawl for its RENDER_TIMEOUT.
func TestGracefulStopCutsRenderAfterGrace(t *testing.T) {
	var started atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Store(true)
		select { // a document that takes 30 s
		case <-release:
		case <-time.After(30 * time.Second):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><body>late</body></html>"))
	}))
	defer srv.Close()
	defer close(release)
	s := settings.New()
	for k, v := range map[string]any{"ROBOTSTXT_OBEY": false, "RETRY_ENABLED": false, "LOGSTATS_INTERVAL": 0,
		"RENDER_TIMEOUT": 60, "SHUTDOWN_GRACE": 1} {
		if err := s.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	sp := follow.New()
	if err := sp.SetArgs(map[string]string{"start_urls": srv.URL + "/", "render": "true"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMap(sp.Settings(), settings.SourceSpider, "follow"); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(sp, s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stoppedAt atomic.Int64
	go func() {
		for !started.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		stoppedAt.Store(time.Now().UnixNano())
		e.Stop("test")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The document takes 30 s and RENDER_TIMEOUT is 60 s: ending well
	// before either means the grace cut the render (the bound is loose for
	// loaded machines; closing the browser takes a moment).
	took := time.Since(time.Unix(0, stoppedAt.Load()))
	t.Logf("the crawl ended %v after the stop", took)
	if took > 15*time.Second {
		t.Errorf("the crawl ended %v after the stop; want about SHUTDOWN_GRACE (1 s)", took)
	}
	if got := res.Stats["engine/kept_queued_on_stop"]; got != 1 {
		t.Errorf("engine/kept_queued_on_stop = %v, want 1 (the cut render); stats %v", got, res.Stats)
	}
	if got := res.Stats["downloader/exception_count"]; got != 0 {
		t.Errorf("the cut render counted as a download error (%v)", got)
	}
}
