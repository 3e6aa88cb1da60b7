package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gocrawl/gocrawl/pipeline"
)

// recordingPipeline counts opens, closes and items, and drops, fails or
// panics on some titles.
type recordingPipeline struct {
	opened, closed atomic.Int64
	seen           atomic.Int64
}

func (p *recordingPipeline) ProcessItem(_ context.Context, item any) (any, error) {
	p.seen.Add(1)
	title := item.(map[string]any)["title"].(string)
	switch title {
	case "Page 1":
		return nil, pipeline.Drop("not wanted")
	case "Page 2":
		return nil, errors.New("storage failed")
	case "Page 3":
		panic("pipeline bug")
	}
	return item, nil
}

func (p *recordingPipeline) Close(context.Context) error {
	p.closed.Add(1)
	return nil
}

func TestItemPipelinesDropCountAndRecover(t *testing.T) {
	checkGoroutines(t)
	srv := linkSite(t, 10)
	sp := newURLsSpider(srv.URL + "/p/0")
	sp.follow = true
	first := &recordingPipeline{}
	var after atomic.Int64
	second := pipeline.Func(func(_ context.Context, item any) (any, error) {
		after.Add(1)
		return item, nil
	})
	log, logs := testLogger()
	e, err := New(sp, testSettings(t), Options{Log: log, Pipelines: []pipeline.Named{
		{Name: "first", Stage: first}, {Name: "second", Stage: second},
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stats
	if first.seen.Load() != 10 || after.Load() != 7 || st["item_scraped_count"] != 7 {
		t.Errorf("first saw %d, second %d, scraped %v; want 10, 7, 7", first.seen.Load(), after.Load(), st["item_scraped_count"])
	}
	if st["item_dropped_count"] != 3 || st["item_dropped_reasons_count/not wanted"] != 1 || st["item_dropped_reasons_count/error"] != 2 {
		t.Errorf("drop stats: %v", st)
	}
	if first.closed.Load() != 1 {
		t.Errorf("pipeline closed %d times, want 1", first.closed.Load())
	}
	out := logs.String()
	if !strings.Contains(out, "storage failed") || !strings.Contains(out, "pipeline bug") {
		t.Errorf("pipeline errors and panics not logged:\n%s", out)
	}
}
