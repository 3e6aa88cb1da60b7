package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/bench/scenario"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/observe/metrics"
	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/persist/redisjob"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	_ "github.com/gocrawl/gocrawl/pipeline/feed/pgsink"     // postgresql:// feeds
	_ "github.com/gocrawl/gocrawl/pipeline/feed/sqlitesink" // sqlite:// feeds
	_ "github.com/gocrawl/gocrawl/pqueue/spillq"            // the spill store, as the gocrawl command links it
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spiders/follow"
	"github.com/gocrawl/gocrawl/throttling"
)

// linkSpider follows every link of every page: the same work as the colly
// runner's OnHTML("a[href]").
type linkSpider struct{ spider.Base }

func (*linkSpider) Name() string { return "bench" }

func (s *linkSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.FollowAll(res, res.Find("a[href]"), nil)
	return nil
}

// runGocrawl crawls with the gocrawl engine as `gocrawl crawl` runs it:
// the scenario's global concurrency, the variant's settings over the
// defaults, and the metrics recorder observing every request.
func runGocrawl(ctx context.Context, sc scenario.Scenario, v scenario.Variant, urls map[string]string, starts []string, counter *progress) (Result, error) {
	var res Result
	set := settings.New()
	if err := set.Set("CONCURRENT_REQUESTS", sc.Concurrency, settings.SourceCommandLine, "bench"); err != nil {
		return res, err
	}
	for k, val := range v.Settings {
		if k == "THROTTLING_SCOPES" {
			val = hostScopes(val.(map[string]any), urls)
		}
		if err := set.Set(k, val, settings.SourceSpider, "bench variant "+v.Name); err != nil {
			return res, err
		}
	}
	for _, kv := range extraSettings {
		if err := set.SetOverride(kv); err != nil {
			return res, err
		}
	}
	if closeAfter > 0 {
		if err := set.Set("CLOSESPIDER_TIMEOUT", closeAfter, settings.SourceCommandLine, "bench -close-after"); err != nil {
			return res, err
		}
	}
	mon, err := metrics.NewMonitor(set, metrics.MonitorOptions{})
	if err != nil {
		return res, err
	}
	var sp spider.Spider = &linkSpider{Base: spider.Base{StartURLs: starts}}
	if v.Spider == "follow" {
		f := follow.New()
		if err := f.SetArgs(map[string]string{"start_urls": strings.Join(starts, ",")}); err != nil {
			return res, err
		}
		sp = f
	}
	opts := engine.Options{Observers: []engine.Observer{mon.Recorder(), countResponses{counter}}}
	if logLevel != "" {
		lv, err := zerolog.ParseLevel(strings.ToLower(logLevel))
		if err != nil {
			return res, fmt.Errorf("-log %q: %w", logLevel, err)
		}
		zerolog.TimeFieldFormat = time.RFC3339Nano
		opts.Log = zerolog.New(os.Stderr).Level(lv).With().Timestamp().Logger()
	}
	if v.FastHTTP {
		opts.Transport = newFastTransport(sc.Concurrency)
	}
	var job *jobdir.Job
	if v.JobDir {
		// As `gocrawl run -s JOBDIR=...` does: the caller opens the job
		// directory and hands it to the engine.
		dir, err := os.MkdirTemp("", "gocrawl-bench-jobdir-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		job, err = jobdir.Open(dir, sp.Name(), jobdir.Options{SyncDelay: jobSyncDelay})
		if err != nil {
			return res, err
		}
		defer job.Close()
		opts.Job = job
	}
	if v.Warc {
		// As `gocrawl run -s WARC_DIR=...`: every exchange archived, in a
		// folder deleted after the run.
		dir, err := os.MkdirTemp("", "gocrawl-bench-warc-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		if err := set.Set("WARC_DIR", dir, settings.SourceCommandLine, "bench variant "+v.Name); err != nil {
			return res, err
		}
	}
	if v.Feed != "" {
		ex, cleanup, err := benchFeed(v.Feed)
		if err != nil {
			return res, err
		}
		defer cleanup()
		opts.Pipelines = feed.Pipelines(ex)
	}
	var rc *redisCounter
	if redisURL != "" {
		// As `gocrawl run -s REDIS_URL=...`: this process is one worker of
		// a job kept in Redis, the frontier, dupefilter and per-host rules
		// shared with the other workers.
		if err := set.Set("REDIS_URL", redisURL, settings.SourceCommandLine, "bench -redis-url"); err != nil {
			return res, err
		}
		if redisJob != "" {
			if err := set.Set("JOB", redisJob, settings.SourceCommandLine, "bench -redis-job"); err != nil {
				return res, err
			}
		}
		shared, err := redisjob.Open(ctx, set, sp, zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
		if err != nil {
			return res, err
		}
		defer shared.Close()
		opts.Shared = shared
		rc = newRedisCounter()
		shared.Client().AddHook(rc)
	}
	eng, err := engine.New(sp, set, opts)
	if err != nil {
		return res, err
	}
	if err := mon.Start(eng); err != nil {
		return res, err
	}
	if _, err := eng.Run(ctx); err != nil {
		return res, err
	}
	snap, err := mon.Finish("finished")
	if err != nil {
		return res, err
	}
	res.Responses, res.OK = snap.Global.Responses, snap.Global.OK
	if job != nil {
		if m, ok, err := job.LastSync(); err == nil && ok {
			res.JobSyncs = m.Count
		}
	}
	res.Errors = snap.Global.Completed() - snap.Global.OK
	if rc != nil {
		res.Redis = rc.stats()
	}
	return res, nil
}

// benchFeed returns a new feed of kind jsonl, sqlite or postgresql (a
// table of BENCH_POSTGRESQL_URL named for the run), keyed by url, and
// what removes it.
func benchFeed(kind string) (*feed.Exporter, func(), error) {
	dir, err := os.MkdirTemp("", "gocrawl-bench-feed-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	var target string
	switch kind {
	case "jsonl":
		target = filepath.Join(dir, "items.jsonl")
	case "sqlite":
		target = "sqlite://" + filepath.Join(dir, "items.db") + "?key=url"
	case "postgresql":
		base := os.Getenv("BENCH_POSTGRESQL_URL")
		if base == "" {
			cleanup()
			return nil, nil, fmt.Errorf("feed postgresql: set BENCH_POSTGRESQL_URL to a database the bench may create tables in")
		}
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		target = fmt.Sprintf("%s%stable=bench_%d&key=url", base, sep, time.Now().UnixNano())
	default:
		cleanup()
		return nil, nil, fmt.Errorf("unknown feed %q", kind)
	}
	ex, err := feed.New(target, feed.Options{})
	if err == nil {
		err = ex.Check()
	}
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return ex, cleanup, nil
}

// closeAfter is the -close-after flag.
var closeAfter float64

// extraSettings are the -set KEY=VALUE flags: settings over the variant's
// (THROTTLING_DEBUG=true LOG_LEVEL=DEBUG, say, to see a run's decisions).
var extraSettings setFlags

// logLevel is the -log flag: the crawl's log to stderr at this level
// (empty: silent).
var logLevel string

type setFlags []string

func (f *setFlags) String() string { return strings.Join(*f, " ") }

func (f *setFlags) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("-set %q: want KEY=VALUE", v)
	}
	*f = append(*f, v)
	return nil
}

// redisURL and redisJob are the -redis-url and -redis-job flags.
var redisURL, redisJob string

// jobSyncDelay is the -jobdir-sync-delay flag.
var jobSyncDelay time.Duration

// countResponses feeds the runner's progress (and memory curve) with
// every response.
type countResponses struct{ p *progress }

func (countResponses) RequestStarted(time.Time, *spider.Request, throttling.Scopes) {}

func (c countResponses) RequestFinished(_ time.Time, _ *spider.Request, _ throttling.Scopes, res *spider.Response, _ error) {
	if res != nil {
		c.p.addBytes(len(res.Body))
		c.p.add(1)
	}
}

// hostScopes replaces "$host" keys of a THROTTLING_SCOPES value by the
// throttling scope of that simulated host ("localhost:PORT").
func hostScopes(m map[string]any, urls map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if name, ok := strings.CutPrefix(k, "$"); ok {
			if u, err := url.Parse(urls[name]); err == nil {
				k = spider.HostKey(u)
			} else {
				k = fmt.Sprintf("invalid-host-%s", name)
			}
		}
		out[k] = v
	}
	return out
}
