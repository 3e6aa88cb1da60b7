package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/spider"
)

// closingSpider records the reason its Close was given.
type closingSpider struct {
	spider.Base
	reason string
}

func (*closingSpider) Name() string { return "closing" }

func (*closingSpider) Parse(context.Context, *spider.Response, spider.Output) error { return nil }

func (s *closingSpider) Close(ctx context.Context) error {
	s.reason = spider.CloseReason(ctx)
	return nil
}

// closingPipeline records the reason its Close was given.
type closingPipeline struct{ reason string }

func (*closingPipeline) ProcessItem(_ context.Context, item any) (any, error) { return item, nil }

func (p *closingPipeline) Close(ctx context.Context) error {
	p.reason = spider.CloseReason(ctx)
	return nil
}

// Spiders and item pipelines are closed with Close(ctx), which carries the
// reason the crawl ended.
func TestCloseGetsTheReason(t *testing.T) {
	sp := &closingSpider{}
	pl := &closingPipeline{}
	e, err := New(sp, testSettings(t), Options{Pipelines: []pipeline.Named{{Name: "closing", Stage: pl}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "finished" || sp.reason != "finished" || pl.reason != "finished" {
		t.Errorf("reason %q; spider's Close saw %q, pipeline's %q; want finished for all", res.Reason, sp.reason, pl.reason)
	}
}

// oldCloseSpider has the Close method of earlier releases, which the
// engine would no longer call.
type oldCloseSpider struct{ spider.Base }

func (*oldCloseSpider) Name() string { return "old" }

func (*oldCloseSpider) Parse(context.Context, *spider.Response, spider.Output) error { return nil }

func (*oldCloseSpider) Close(context.Context, string) error { return nil }

func TestOldSpiderCloseIsRefused(t *testing.T) {
	_, err := New(&oldCloseSpider{}, testSettings(t), Options{})
	if err == nil || !strings.Contains(err.Error(), "spider old") || !strings.Contains(err.Error(), "spider.CloseReason(ctx)") {
		t.Fatalf("New: %v, want an error naming the spider and the new signature", err)
	}
}
