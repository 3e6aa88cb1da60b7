// Package engine runs a crawl. Follow one request through it, file by
// file:
//
//  1. Start requests (spider.Start, consumed lazily) and requests produced
//     by callbacks are enqueued into the Scheduler (dupefilter, throttling
//     scopes assigned). [loop.go: feedStarts, handleEvents]
//  2. Whenever a global slot is free (CONCURRENT_REQUESTS) and the start
//     rate allows (MAX_STARTS_PER_SECOND), the loop asks the scheduler for
//     the next request whose scopes are ready (Next). If none is ready it
//     sleeps until the scheduler's wake time, a completion, or a new request.
//     [loop.go: startRequests, sleep]
//  3. A worker goroutine (idle workers are reused, so their stacks stay
//     grown) downloads the request through the downloader middlewares.
//     The innermost step reports the response or error to the throttler
//     (backoff, Retry-After, ...) and to observers (metrics).
//     [download.go: process, fetchAndReport]
//  4. The slot is freed (a counter the loop reads; it is woken only if it
//     waits for a slot); the worker passes the response through the spider
//     middlewares to the callback, whose items go through the item
//     pipelines and whose requests go back to step 1 (FollowAll's links
//     together). [scrape.go: scrape, callback, processItem; output.go]
//  5. When the callback has finished and its requests are enqueued, the job
//     is acknowledged to the scheduler (a persistent queue forgets it only
//     then), and the loop ends when nothing is queued or running.
//     [loop.go: handleEvents, done]
//
// The files, in the order a request meets them:
//
//	engine.go    Options, Engine, New, Run, Stop, Abort; opening and
//	             closing the spider, scheduler and pipelines
//	loop.go      the loop: the one goroutine that enqueues, starts and
//	             acknowledges jobs, and decides when the crawl ends
//	download.go  a worker's download step: throttling admission, the
//	             downloader middlewares, the download stats; Download
//	scrape.go    callbacks, errbacks, drops and panics; items through the
//	             item pipelines
//	output.go    the spider.Output handed to callbacks and errbacks
//	handlers.go  which download handler a request gets: HTTP, or one
//	             registered in package handler (render)
//	job.go       the Job interface (JOBDIR): storage, restoring,
//	             checkpointing
//	shared.go    the Shared interface (REDIS_URL)
//
// Stopping: Stop (or cancelling Run's ctx) takes effect at once: nothing
// new is sent, jobs still waiting (for throttling admission, a
// throttling_delay, robots.txt) give up their slot unacknowledged, in-flight
// downloads get SHUTDOWN_GRACE seconds and are then cancelled (also
// unacknowledged), and the callbacks of downloaded responses finish.
// Abort also cancels in-flight downloads and callbacks at once. Jobs left
// unacknowledged stay in a persistent queue, which hands them out again
// (at least once).
package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/internal/cputime"
	"github.com/gocrawl/gocrawl/internal/procs"
	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Options configure an Engine beyond its settings.
type Options struct {
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Log is the crawl's logger; the zero logger is silent.
	Log zerolog.Logger
	// Pipelines run after those of ITEM_PIPELINES (feed exports go here).
	Pipelines []pipeline.Named
	// Observers are told about every download (metrics).
	Observers []Observer
	// Transport replaces the downloader's HTTP transport (tests).
	Transport http.RoundTripper
	// Stats replaces the stats collector (for resuming a job).
	Stats *stats.Collector
	// Job is the crawl's job kept on disk (JOBDIR: an open *jobdir.Job),
	// or nil to keep the crawl's state in memory. The scheduler keeps its
	// queue and dupefilter in it; the stats (unless Stats is set) and the
	// throttling scopes' state are restored from it, and saved
	// periodically and at close. The caller opens and closes it (see
	// package jobdir).
	Job Job
	// Shared is the job this process crawls together with other worker
	// processes (a distributed crawl, REDIS_URL), or nil. It cannot be used
	// with Job. The caller opens and closes it (see package redisjob).
	Shared Shared
	// StartRequests, when set, replaces the spider's Start: the crawl
	// begins with these requests and everything else (settings, callbacks,
	// middlewares) is the spider's. `gocrawl parse` and `gocrawl fetch`
	// crawl one URL this way.
	StartRequests iter.Seq2[*spider.Request, error]
}

// Observer is told about every HTTP request the crawl sends: when it is
// admitted and when its response or error arrives. Calls come from worker
// goroutines and must be quick.
type Observer interface {
	RequestStarted(now time.Time, req *spider.Request, scopes throttling.Scopes)
	RequestFinished(now time.Time, req *spider.Request, scopes throttling.Scopes, res *spider.Response, err error)
}

// Result summarises a finished crawl.
type Result struct {
	// Reason the crawl ended: "finished", "shutdown", "aborted",
	// "closespider_timeout", "closespider_itemcount", ...
	Reason string
	// Elapsed is the crawl's duration.
	Elapsed time.Duration
	// Stats is the final snapshot of the stats.
	Stats map[string]float64
}

// Engine runs one spider. Create it with New, run it once with Run.
type Engine struct {
	sp        spider.Spider
	set       *settings.Settings
	clock     clock.Clock
	log       zerolog.Logger
	stats     *stats.Collector
	job       Job    // JOBDIR, or nil
	shared    Shared // a distributed job, or nil
	crawler   *spider.Crawler
	thr       *throttling.Throttler
	dl        *downloader.Downloader
	sched     scheduler.Scheduler
	fetch     *middleware.DownloaderChain
	gate      offlineThrottler
	handle    middleware.Handler
	pipes     []pipeline.Named
	observers []Observer
	starts    *throttling.StartLimiter
	hs        *handlers                         // download handlers besides HTTP (handlers.go)
	rc        *recrawler                        // recrawl records, or nil (recrawl.go)
	startReqs iter.Seq2[*spider.Request, error] // Options.StartRequests
	dropSeen  sync.Map                          // drop reasons already logged at INFO
	named     sync.Map                          // callbacks resolved by name (scrape.go)

	maxInflight int
	itemSem     chan struct{}
	procs       *procs.Holder // ADAPTIVE_GOMAXPROCS, or nil
	// procsNow is the real time for the governor (the CPU time it
	// divides by it is real, whatever the crawl's clock); tests set it.
	procsNow func() time.Time

	events chan event
	// downloaded counts the downloads over, whose global slots are free
	// (freeSlot); slotWanted is set by the loop while it waits for a
	// slot, and slotFreed then wakes it.
	downloaded atomic.Int64
	slotWanted atomic.Bool
	slotFreed  chan struct{}
	stopOnce   sync.Once
	stopCh     chan string
	abortCtx   context.Context // cancelled by Abort: in-flight downloads stop
	abort      context.CancelFunc
	aborted    atomic.Bool
	// stopCtx is cancelled by Stop (and Abort): jobs still waiting (for
	// throttling admission, a delay, robots.txt) give up their slot
	// instead of starting, and nothing new is sent.
	stopCtx context.Context
	stopNow context.CancelFunc
	// graceCtx is cancelled SHUTDOWN_GRACE after Stop, and by Abort:
	// downloads still in flight then are cut short and kept queued.
	graceCtx   context.Context
	graceEnd   context.CancelFunc
	grace      time.Duration
	runDone    chan struct{} // closed when Run returns
	runDoneMu  sync.Once
	interrupts atomic.Int64 // jobs kept queued because of the stop

	// CLOSESPIDER_* limits, read once (0 = off).
	closeItems, closePages, closeErrors int64

	// Counters updated for every request, looked up once.
	cRequests, cGets, cResponses, cBytes, cOK, cExceptions *stats.Counter

	// fatal is the first error that stopped the crawl (Run's error).
	fatalMu sync.Mutex
	fatal   error

	items, pages, errs atomic.Int64
	waitingAdmission   atomic.Int64
	delayedWarned      atomic.Bool
}

// New prepares a crawl of sp with settings s (already layered: defaults,
// file, spider, env, command line). Configuration errors are returned here,
// before anything is fetched.
func New(sp spider.Spider, s *settings.Settings, opts Options) (*Engine, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if _, old := sp.(interface {
		Close(context.Context, string) error
	}); old {
		return nil, fmt.Errorf("spider %s: its Close method must be Close(ctx context.Context) error (spider.Closer), not Close(ctx, reason string) error: read the reason with spider.CloseReason(ctx)", sp.Name())
	}
	if opts.Job != nil && opts.Shared != nil {
		return nil, errors.New("JOBDIR and REDIS_URL cannot be used together: a job is kept either in a job directory or in Redis")
	}
	if opts.Stats == nil && opts.Job != nil {
		st, err := opts.Job.Stats()
		if err != nil {
			return nil, fmt.Errorf("JOBDIR: %w", err)
		}
		opts.Stats = st
	}
	if opts.Stats == nil {
		opts.Stats = stats.New()
	}
	e := &Engine{
		sp: sp, set: s, clock: opts.Clock, log: opts.Log, stats: opts.Stats, job: opts.Job, shared: opts.Shared,
		observers:   opts.Observers,
		startReqs:   opts.StartRequests,
		maxInflight: s.Int("CONCURRENT_REQUESTS"),
		itemSem:     make(chan struct{}, max(1, s.Int("CONCURRENT_ITEMS"))),
		events:      make(chan event, 256),
		procsNow:    time.Now,
		slotFreed:   make(chan struct{}, 1),
		stopCh:      make(chan string, 1),
	}
	e.abortCtx, e.abort = context.WithCancel(context.Background())
	e.stopCtx, e.stopNow = context.WithCancel(e.abortCtx)
	e.graceCtx, e.graceEnd = context.WithCancel(e.abortCtx)
	e.grace = s.Seconds("SHUTDOWN_GRACE")
	e.runDone = make(chan struct{})
	e.closeItems = int64(s.Int("CLOSESPIDER_ITEMCOUNT"))
	e.closePages = int64(s.Int("CLOSESPIDER_PAGECOUNT"))
	e.closeErrors = int64(s.Int("CLOSESPIDER_ERRORCOUNT"))
	e.cRequests = e.stats.Counter("downloader/request_count")
	e.cGets = e.stats.Counter("downloader/request_method_count/GET")
	e.cResponses = e.stats.Counter("downloader/response_count")
	e.cBytes = e.stats.Counter("downloader/response_bytes")
	e.cOK = e.stats.Counter("downloader/response_ok_count")
	e.cExceptions = e.stats.Counter("downloader/exception_count")

	dopts := downloader.OptionsFromSettings(s)
	dopts.Log = opts.Log
	dopts.Transport = opts.Transport
	e.dl = downloader.New(dopts)

	topts := throttling.Options{Clock: opts.Clock, Log: opts.Log, DNS: e.dl.DNS()}
	if opts.Shared != nil {
		topts.Shared = opts.Shared.Throttling()
	}
	thr, err := throttling.New(s, topts)
	if err != nil {
		return nil, err
	}
	e.thr = thr
	// An evicted scope is a host the crawl is not using: its idle
	// connections are closed at once rather than at DOWNLOAD_IDLE_TIMEOUT.
	thr.OnEvict(func(scope string) { e.dl.CloseHost(scope) })
	if err := e.restoreJob(); err != nil {
		return nil, err
	}
	if err := e.initHandlers(); err != nil {
		return nil, err
	}
	startRate := s.Float("MAX_STARTS_PER_SECOND")
	if opts.Shared != nil {
		startRate = 0 // the shared frontier enforces it for the whole job
	}
	e.starts = throttling.NewStartLimiter(startRate, s.Int("MAX_STARTS_BURST"), opts.Clock.Now())

	e.crawler = &spider.Crawler{Spider: sp, Settings: s, Stats: e.stats, Log: opts.Log, Throttler: thr, Download: e.Download}

	// The downloader chain is built before the scheduler: the scheduler's
	// gate asks it whether a request will be answered offline (HTTP cache),
	// in which case the request gets no throttling scopes.
	e.fetch, err = middleware.NewDownloaderChain(e.crawler, middleware.FetcherFunc(e.fetchAndReport))
	if err != nil {
		_ = e.hs.close()
		return nil, err
	}
	e.gate = offlineThrottler{Throttler: thr, chain: e.fetch}
	storage, err := e.jobStorage()
	if err != nil {
		_ = e.fetch.Close(context.Background())
		_ = e.hs.close()
		return nil, err
	}
	if e.rc, err = newRecrawler(context.Background(), e); err != nil {
		_ = e.fetch.Close(context.Background())
		_ = e.hs.close()
		return nil, err
	}
	e.sched, err = scheduler.New(scheduler.Deps{Settings: s, Spider: sp, Throttler: e.gate, Stats: e.stats, Log: opts.Log, Clock: opts.Clock, Storage: storage})
	if err != nil {
		_ = e.fetch.Close(context.Background())
		_ = e.hs.close()
		return nil, err
	}
	e.handle, _, err = middleware.BuildSpider(e.crawler, middleware.HandlerFunc(e.callback))
	if err != nil {
		_ = e.fetch.Close(context.Background())
		_ = e.hs.close()
		return nil, err
	}
	pipes, err := pipeline.Build(e.crawler)
	if err != nil {
		_ = e.fetch.Close(context.Background())
		_ = e.hs.close()
		return nil, err
	}
	e.pipes = append(pipes, opts.Pipelines...)
	return e, nil
}

// Crawler returns the crawler object handed to components and callbacks.
func (e *Engine) Crawler() *spider.Crawler { return e.crawler }

// Throttler returns the crawl's throttler.
func (e *Engine) Throttler() *throttling.Throttler { return e.thr }

// Stop asks the crawl to end gracefully: nothing new is sent (requests
// waiting for a delay, a slot or robots.txt stay queued), in-flight
// downloads get SHUTDOWN_GRACE seconds to finish before they are cut
// short (and stay queued too), callbacks of downloaded responses finish,
// then Run returns with reason. Later calls are ignored. Safe to call
// from any goroutine.
func (e *Engine) Stop(reason string) {
	e.stopOnce.Do(func() {
		e.stopNow()
		e.stopCh <- reason
		if e.grace <= 0 {
			e.graceEnd()
			return
		}
		t := e.clock.NewTimer(e.grace)
		go func() {
			defer t.Stop()
			select {
			case <-t.C():
				e.graceEnd()
			case <-e.graceCtx.Done():
			case <-e.runDone:
			}
		}()
	})
}

// Abort cancels in-flight downloads and callbacks; Run returns as soon as
// their workers finish. Requests cut short are not acknowledged, so a persistent queue
// keeps them for the next run.
func (e *Engine) Abort() {
	e.aborted.Store(true)
	e.Stop("aborted")
	e.abort()
}

// Run crawls until there is nothing left to do, Stop or Abort is called,
// a CLOSESPIDER_* limit is reached, or ctx is cancelled (a graceful stop
// with reason "shutdown").
//
// Its error says why the crawl stopped abnormally, and is nil for a crawl
// that ended or was stopped on purpose. A crawl that could not start
// (the spider's Open, the scheduler or a pipeline failed to open) returns
// a nil Result and that error. A crawl that ran always returns its Result;
// its error is then the failure that stopped it early, if any (the job
// directory or a feed could not be written, a full disk; the scheduler
// failed: Result.Reason says which, "jobdir_error", "spill_error" for the
// temporary queue folder of a crawl without JOBDIR, "feed_error",
// "scheduler_error"), joined with the errors met closing the pipelines,
// the scheduler, the download handlers and the spider. The gocrawl
// command exits with status 1 on such an error.
func (e *Engine) Run(ctx context.Context) (*Result, error) {
	start := e.clock.Now()
	e.stats.Set("start_time", float64(start.UnixMilli())/1000) // Unix seconds, to the millisecond
	// Work (downloads, callbacks) must survive a graceful stop: only Abort
	// cancels it. ctx's cancellation is watched by the loop instead.
	cctx := spider.WithCrawler(context.WithoutCancel(ctx), e.crawler)
	// The work context of downloads and callbacks: it keeps ctx's values
	// and is cancelled by Abort only.
	wctx, cancelWork := mergeCancel(cctx, e.abortCtx)
	defer cancelWork()

	if err := e.open(cctx); err != nil {
		return nil, err
	}
	stopCheckpoints := e.startCheckpoints()
	defer e.runDoneMu.Do(func() { close(e.runDone) })
	if e.set.Bool("ADAPTIVE_GOMAXPROCS") {
		e.procs = procs.Hold(cputime.Process)
		defer e.procs.Release()
	}
	reason := e.loop(wctx, ctx.Done())
	if e.aborted.Load() {
		reason = "aborted"
	}
	stopCheckpoints()
	if e.rc != nil {
		e.rc.finished(cctx, reason)
	}
	elapsed := e.clock.Now().Sub(start)
	e.finishStats(elapsed, reason)
	closeErr := e.close(context.WithoutCancel(cctx), reason)
	res := &Result{Reason: reason, Elapsed: elapsed, Stats: e.stats.Snapshot()}
	if fatal := e.fatalErr(); fatal != nil {
		return res, errors.Join(fmt.Errorf("crawl stopped (%s): %w", reason, fatal), closeErr)
	}
	return res, closeErr
}

// fail stops the crawl because of err, which Run returns with reason;
// only the first failure is kept. Nothing new is sent;
// in-flight work finishes as in Stop.
func (e *Engine) fail(reason string, err error) {
	e.fatalMu.Lock()
	first := e.fatal == nil
	if first {
		e.fatal = err
	}
	e.fatalMu.Unlock()
	if first {
		e.log.Error().Err(err).Str("reason", reason).Msg("stopping the crawl: it cannot go on")
		e.stats.Inc("engine/fatal_errors", 1)
	}
	e.Stop(reason)
}

func (e *Engine) fatalErr() error {
	e.fatalMu.Lock()
	defer e.fatalMu.Unlock()
	return e.fatal
}

func (e *Engine) open(ctx context.Context) error {
	if o, ok := e.sp.(spider.Opener); ok {
		if err := o.Open(ctx, e.crawler); err != nil {
			return fmt.Errorf("opening spider %s: %w", e.sp.Name(), err)
		}
	}
	if err := e.sched.Open(ctx); err != nil {
		return fmt.Errorf("opening scheduler: %w", err)
	}
	for _, p := range e.pipes {
		if o, ok := p.Stage.(pipeline.Opener); ok {
			if err := o.Open(ctx, e.crawler); err != nil {
				return fmt.Errorf("opening item pipeline %s: %w", p.Name, err)
			}
		}
	}
	return nil
}

func (e *Engine) close(ctx context.Context, reason string) error {
	ctx = spider.WithCloseReason(ctx, reason)
	var errs []error
	for _, p := range e.pipes {
		if c, ok := p.Stage.(pipeline.Closer); ok {
			if err := c.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("closing item pipeline %s: %w", p.Name, err))
			}
		}
	}
	if err := e.sched.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("closing scheduler: %w", err))
	}
	if err := e.checkpointJob(); err != nil {
		errs = append(errs, err)
	}
	if err := e.fetch.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	e.dl.Close()
	if err := e.hs.close(); err != nil {
		errs = append(errs, err)
	}
	if c, ok := e.sp.(spider.Closer); ok {
		if err := c.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing spider: %w", err))
		}
	}
	return errors.Join(errs...)
}

// finishStats records the crawl's duration and rates when it ends.
func (e *Engine) finishStats(elapsed time.Duration, reason string) {
	secs := elapsed.Seconds()
	e.stats.Set("elapsed_time_seconds", secs)
	e.stats.Set("finish_time", float64(e.clock.Now().UnixMilli())/1000)
	if secs > 0 {
		ok := e.stats.Get("downloader/response_ok_count")
		completed := e.stats.Get("downloader/response_count") + e.stats.Get("downloader/exception_count")
		e.stats.Set("ok_per_second", ok/secs)
		e.stats.Set("completed_per_second", completed/secs)
	}
	e.log.Info().Str("reason", reason).Stringer("elapsed", elapsed.Round(time.Millisecond)).Msg("spider closed")
}

// mergeCancel returns a context that is done when either a or b is.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}
