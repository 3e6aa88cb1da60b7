package scheduler_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// wakeSpider downloads a page outside the scheduler (Crawler.Download)
// while its only queued request waits for the same scope, whose
// concurrency is 1. No download of the engine's ends when the scope frees:
// only the scheduler's Changed notification can wake the engine.
type wakeSpider struct {
	spider.Base
	url     string
	arrived chan struct{} // the outside download reached the server
	parsed  atomic.Int64
}

func (*wakeSpider) Name() string { return "wake" }

func (s *wakeSpider) Open(ctx context.Context, c *spider.Crawler) error {
	go c.Download(ctx, spider.MustRequest(s.url+"/outside", nil))
	return nil
}

func (s *wakeSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		<-s.arrived // the scope's only slot is taken
		yield(spider.MustRequest(s.url+"/queued", nil), nil)
	}
}

func (s *wakeSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.parsed.Add(1)
	return nil
}

func TestEngineWakesWhenScopeFreesOutsideScheduler(t *testing.T) {
	arrived := make(chan struct{})
	var once atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/outside" {
			if once.CompareAndSwap(false, true) {
				close(arrived)
			}
			time.Sleep(200 * time.Millisecond)
		}
		fmt.Fprint(w, "<html></html>")
	}))
	defer srv.Close()
	host := spider.MustRequest(srv.URL, nil).Host()
	s := settings.New()
	if err := s.SetMap(map[string]any{
		"ROBOTSTXT_OBEY":    false,
		"THROTTLING_SCOPES": map[string]any{host: map[string]any{"concurrency": 1, "delay": 0}},
	}, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	sp := &wakeSpider{url: srv.URL, arrived: arrived}
	e, err := engine.New(sp, s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "finished" || sp.parsed.Load() != 1 {
		t.Fatalf("crawl ended %q with %d responses parsed; want finished with 1 (the engine slept through the scope freeing up)", res.Reason, sp.parsed.Load())
	}
}
