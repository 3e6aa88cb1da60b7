// Package crawltest runs a spider to the end against a local site and
// collects its items and stats: the one crawl helper of the tests of the
// example spiders, the middlewares, the proxy pool and the renderer.
package crawltest

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/pipeline"
	_ "github.com/gocrawl/gocrawl/pqueue/spillq" // the spill store, as cli programs link it
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Options are a test crawl's settings and job directory.
type Options struct {
	// Settings are set over the defaults and the spider's own settings
	// (spider.SettingsProvider), as -s options are; ROBOTSTXT_OBEY stays
	// on unless set here.
	Settings map[string]any
	// JobDir, if set, keeps the crawl's state there (JOBDIR).
	JobDir string
	// Log receives the crawl's log lines (JSON), if set.
	Log io.Writer
	// CallbackErrors allows callback errors; by default each fails the
	// test.
	CallbackErrors bool
	// Engine holds the other engine options (a clock, observers,
	// pipelines): the collecting pipeline runs after its Pipelines, and
	// Log, when set, replaces its Log.
	Engine engine.Options
	// Timeout, if set, cancels the crawl after that long: it then ends
	// with Reason "shutdown" instead of hanging the test.
	Timeout time.Duration
}

// Result is what a crawl produced.
type Result struct {
	Reason string
	Items  []any
	Stats  map[string]float64
}

// Run crawls with sp until it ends and returns its items in the order the
// pipelines saw them. It fails the test on an engine error or any
// callback error (spider_exceptions/count).
func Run(t testing.TB, sp spider.Spider, opts Options) Result {
	t.Helper()
	set := settings.New()
	if p, ok := sp.(spider.SettingsProvider); ok {
		if err := set.SetMap(p.Settings(), settings.SourceSpider, "spider "+sp.Name()); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range opts.Settings {
		if err := set.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var items []any
	collect := pipeline.Func(func(_ context.Context, item any) (any, error) {
		mu.Lock()
		items = append(items, item)
		mu.Unlock()
		return item, nil
	})
	eo := opts.Engine
	eo.Pipelines = append(slices.Clip(eo.Pipelines), pipeline.Named{Name: "collect", Stage: collect})
	if opts.Log != nil {
		eo.Log = zerolog.New(zerolog.SyncWriter(opts.Log)) // callbacks log from many goroutines
	}
	if opts.JobDir != "" {
		j, err := jobdir.Open(opts.JobDir, sp.Name(), jobdir.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := j.Close(); err != nil {
				t.Error(err)
			}
		}()
		eo.Job = j
	}
	e, err := engine.New(sp, set, eo)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	res, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Stats["spider_exceptions/count"]; n > 0 && !opts.CallbackErrors {
		t.Errorf("%v callback errors", n)
	}
	return Result{Reason: res.Reason, Items: items, Stats: res.Stats}
}
