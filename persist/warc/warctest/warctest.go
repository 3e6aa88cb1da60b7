// Package warctest runs a spider against a web archive in a Go test: record
// a crawl once with WARC_DIR, keep the archive beside the test, and test
// the spider's callbacks against it in CI, without the network:
//
//	func TestParse(t *testing.T) {
//		res := warctest.Replay(t, myspider.New(), "testdata/site.warc.gz", nil)
//		if len(res.Items) != 20 {
//			t.Errorf("%d items", len(res.Items))
//		}
//	}
//
// Every request of the crawl is answered from the archive (WARC_REPLAY);
// one the archive lacks fails, and Replay fails the test naming its URL.
package warctest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Result is what a crawl produced.
type Result struct {
	// Reason is why the crawl ended ("finished").
	Reason string
	// Items are the spider's items, in the order the pipeline saw them.
	Items []any
	// Stats are the crawl's final stats.
	Stats map[string]float64
	// Missing counts the requests the archive could not answer.
	Missing int
}

// Replay crawls with sp, every request answered from archive (a folder of
// WARC files or one file), and returns its items. set overrides settings
// (nil for none). It fails the test when the crawl cannot start (an
// archive that cannot be read, with its file and offset), when a request
// is not in the archive, or when a callback fails.
func Replay(t testing.TB, sp spider.Spider, archive string, set map[string]any) Result {
	t.Helper()
	res, err := Run(context.Background(), sp, archive, set)
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing > 0 {
		t.Errorf("%d requests were not in the archive %s (the log names them)", res.Missing, archive)
	}
	if n := res.Stats["spider_exceptions/count"]; n > 0 {
		t.Errorf("%v callback errors", n)
	}
	return res
}

// Run is Replay without a test: the crawl's result, or the error that kept
// it from starting.
func Run(ctx context.Context, sp spider.Spider, archive string, set map[string]any) (Result, error) {
	s := settings.New()
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if err := s.Set(k, set[k], settings.SourceCommandLine, "warctest"); err != nil {
			return Result{}, err
		}
	}
	if err := s.Set("WARC_REPLAY", archive, settings.SourceCommandLine, "warctest"); err != nil {
		return Result{}, err
	}
	var mu sync.Mutex
	var items []any
	collect := pipeline.Func(func(_ context.Context, item any) (any, error) {
		mu.Lock()
		items = append(items, item)
		mu.Unlock()
		return item, nil
	})
	e, err := engine.New(sp, s, engine.Options{Pipelines: []pipeline.Named{{Name: "collect", Stage: collect}}})
	if err != nil {
		return Result{}, err
	}
	r, err := e.Run(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("replaying %s: %w", archive, err)
	}
	return Result{Reason: r.Reason, Items: items, Stats: r.Stats, Missing: int(r.Stats["warc/replay_missing"])}, nil
}
