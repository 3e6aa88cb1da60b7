// Package engine runs a crawl. This file is the whole loop; follow one
// request through it:
//
//  1. Start requests (spider.Start, consumed lazily) and requests produced
//     by callbacks are enqueued into the Scheduler (dupefilter, throttling
//     scopes assigned).
//  2. Whenever a global slot is free (CONCURRENT_REQUESTS) and the start
//     rate allows (MAX_STARTS_PER_SECOND), the loop asks the scheduler for
//     the next request whose scopes are ready (Next). If none is ready it
//     sleeps until the scheduler's wake time, a completion, or a new request.
//  3. A worker goroutine (idle workers are reused, so their stacks stay
//     grown) downloads the request through the downloader middlewares.
//     The innermost step reports the response or error to the throttler
//     (backoff, Retry-After, ...) and to observers (metrics).
//  4. The slot is freed; the worker passes the response through the spider
//     middlewares to the callback, whose items go through the item
//     pipelines and whose requests go back to step 1.
//  5. When the callback has finished and its requests are enqueued, the job
//     is acknowledged to the scheduler (a persistent queue forgets it only
//     then), and the loop ends when nothing is queued or running.
//
// Stopping: Stop (or cancelling Run's ctx) takes effect before the next
// request starts; jobs still waiting for throttling admission give up their
// slot unacknowledged, and in-flight downloads and their callbacks finish.
// Abort also cancels in-flight downloads and callbacks; their jobs are not
// acknowledged, so a persistent queue hands them out again (at least once).
package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/jobdir"
	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/stats"
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
	// Job is the open job directory (JOBDIR), or nil to keep the crawl's
	// state in memory. The scheduler keeps its queue and dupefilter in it;
	// the stats (unless Stats is set) and the throttling scopes' state are
	// restored from it, and saved periodically and at close. The caller
	// opens and closes it (see package jobdir).
	Job *jobdir.Job
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
	job       *jobdir.Job // JOBDIR, or nil
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

	maxInflight int
	itemSem     chan struct{}

	events   chan event
	stopOnce sync.Once
	stopCh   chan string
	abortCtx context.Context // cancelled by Abort: in-flight downloads stop
	abort    context.CancelFunc
	aborted  atomic.Bool
	// stopCtx is cancelled by Stop (and Abort): jobs still waiting for
	// throttling admission give up their slot instead of starting.
	stopCtx context.Context
	stopNow context.CancelFunc

	// CLOSESPIDER_* limits, read once (0 = off).
	closeItems, closePages, closeErrors int64

	// Counters updated for every request, looked up once.
	cRequests, cGets, cResponses, cBytes, cOK, cExceptions *stats.Counter

	items, pages, errs atomic.Int64
	waitingAdmission   atomic.Int64
	delayedWarned      atomic.Bool
}

type evKind uint8

const (
	evRequest    evKind = iota // a callback produced a request
	evDownloaded               // a download finished: its global slot is free
	evFinished                 // a job is fully processed
)

type event struct {
	kind evKind
	req  *spider.Request
	job  *scheduler.Job
	ack  bool // evFinished: acknowledge the job to the scheduler
}

// New prepares a crawl of sp with settings s (already layered: defaults,
// file, spider, env, command line). Configuration errors are returned here,
// before anything is fetched.
func New(sp spider.Spider, s *settings.Settings, opts Options) (*Engine, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real
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
		sp: sp, set: s, clock: opts.Clock, log: opts.Log, stats: opts.Stats, job: opts.Job,
		observers:   opts.Observers,
		maxInflight: s.Int("CONCURRENT_REQUESTS"),
		itemSem:     make(chan struct{}, max(1, s.Int("CONCURRENT_ITEMS"))),
		events:      make(chan event, 1024),
		stopCh:      make(chan string, 1),
	}
	e.abortCtx, e.abort = context.WithCancel(context.Background())
	e.stopCtx, e.stopNow = context.WithCancel(e.abortCtx)
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

	thr, err := throttling.New(s, throttling.Options{Clock: opts.Clock, Log: opts.Log, DNS: e.dl.DNS()})
	if err != nil {
		return nil, err
	}
	e.thr = thr
	if err := e.restoreJob(); err != nil {
		return nil, err
	}
	e.starts = throttling.NewStartLimiter(s.Float("MAX_STARTS_PER_SECOND"), s.Int("MAX_STARTS_BURST"), opts.Clock.Now())

	e.crawler = &spider.Crawler{Spider: sp, Settings: s, Stats: e.stats, Log: opts.Log, Throttler: thr, Download: e.Download}

	// The downloader chain is built before the scheduler: the scheduler's
	// gate asks it whether a request will be answered offline (HTTP cache),
	// in which case the request gets no throttling scopes.
	e.fetch, err = middleware.NewDownloaderChain(e.crawler, middleware.FetcherFunc(e.fetchAndReport))
	if err != nil {
		return nil, err
	}
	e.gate = offlineThrottler{Throttler: thr, chain: e.fetch}
	storage, err := e.jobStorage()
	if err != nil {
		_ = e.fetch.Close()
		return nil, err
	}
	e.sched, err = scheduler.New(scheduler.Deps{Settings: s, Spider: sp, Throttler: e.gate, Stats: e.stats, Log: opts.Log, Clock: opts.Clock, Storage: storage})
	if err != nil {
		_ = e.fetch.Close()
		return nil, err
	}
	e.handle, _, err = middleware.BuildSpider(e.crawler, middleware.HandlerFunc(e.callback))
	if err != nil {
		_ = e.fetch.Close()
		return nil, err
	}
	pipes, err := pipeline.Build(e.crawler)
	if err != nil {
		_ = e.fetch.Close()
		return nil, err
	}
	e.pipes = append(pipes, opts.Pipelines...)
	return e, nil
}

// Crawler returns the crawler object handed to components and callbacks.
func (e *Engine) Crawler() *spider.Crawler { return e.crawler }

// Throttler returns the crawl's throttler.
func (e *Engine) Throttler() *throttling.Throttler { return e.thr }

// Stop asks the crawl to end gracefully: no new request is started,
// in-flight requests and their callbacks finish, then Run returns with
// reason. Later calls are ignored. Safe to call from any goroutine.
func (e *Engine) Stop(reason string) {
	e.stopOnce.Do(func() {
		e.stopNow()
		e.stopCh <- reason
	})
}

// Abort cancels in-flight downloads; Run returns as soon as their workers
// finish. Requests cut short are not acknowledged, so a persistent queue
// keeps them for the next run.
func (e *Engine) Abort() {
	e.aborted.Store(true)
	e.Stop("aborted")
	e.abort()
}

// Run crawls until there is nothing left to do, Stop or Abort is called,
// a CLOSESPIDER_* limit is reached, or ctx is cancelled (a graceful stop
// with reason "shutdown").
func (e *Engine) Run(ctx context.Context) (*Result, error) {
	start := e.clock.Now()
	e.stats.Set("start_time", float64(start.Unix()))
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
	reason := e.loop(wctx, ctx.Done())
	if e.aborted.Load() {
		reason = "aborted"
	}
	stopCheckpoints()
	elapsed := e.clock.Now().Sub(start)
	e.finishStats(elapsed, reason)
	closeErr := e.close(context.WithoutCancel(cctx), reason)
	return &Result{Reason: reason, Elapsed: elapsed, Stats: e.stats.Snapshot()}, closeErr
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
		if o, ok := p.ItemPipeline.(pipeline.Opener); ok {
			if err := o.Open(ctx, e.crawler); err != nil {
				return fmt.Errorf("opening item pipeline %s: %w", p.Name, err)
			}
		}
	}
	return nil
}

func (e *Engine) close(ctx context.Context, reason string) error {
	var errs []error
	for _, p := range e.pipes {
		if c, ok := p.ItemPipeline.(pipeline.Closer); ok {
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
	if err := e.fetch.Close(); err != nil {
		errs = append(errs, err)
	}
	e.dl.Close()
	if c, ok := e.sp.(spider.Closer); ok {
		if err := c.Close(ctx, reason); err != nil {
			errs = append(errs, fmt.Errorf("closing spider: %w", err))
		}
	}
	return errors.Join(errs...)
}

// loop is the engine: it owns the inflight count and is the only caller of
// Scheduler.Enqueue and Next.
// ctx is the work context; done signals a graceful stop.
func (e *Engine) loop(ctx context.Context, done <-chan struct{}) string {
	next, stopStarts := iter.Pull2(e.sp.Start(ctx))
	defer stopStarts()
	// Jobs run on reused worker goroutines: a fresh goroutine per request
	// would grow its stack through the middleware chains every time.
	work := make(chan *scheduler.Job)
	var workers sync.WaitGroup
	defer func() {
		close(work) // every job is finished: idle workers exit
		workers.Wait()
	}()
	dispatch := func(job *scheduler.Job) {
		select {
		case work <- job: // an idle worker takes it
		default:
			workers.Go(func() {
				for ; job != nil; job = <-work {
					e.process(ctx, job)
				}
			})
		}
	}
	startsDone := false
	lowWater := max(4*e.maxInflight, 256)
	// Callbacks run after their slot is freed; cap how many jobs may be
	// between download and acknowledgement so that slow callbacks slow the
	// crawl down instead of piling up responses in memory.
	maxActive := 0
	if e.maxInflight > 0 {
		maxActive = 2*e.maxInflight + 16
	}

	inflight := 0 // downloads holding a global slot
	active := 0   // jobs not yet finished (download + callback)
	stopping := ""
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var closeTimer <-chan time.Time
	if d := e.set.Seconds("CLOSESPIDER_TIMEOUT"); d > 0 {
		t := e.clock.NewTimer(d)
		defer t.Stop()
		closeTimer = t.C()
	}

	for {
		// 0. A stop requested since the last turn takes effect before
		// anything else starts: Stop() cancels stopCtx synchronously, and a
		// cancelled ctx (done) is turned into Stop here.
		select {
		case <-done:
			done = nil
			e.Stop("shutdown")
		default:
		}
		if stopping == "" && e.stopCtx.Err() != nil {
			stopping = <-e.stopCh
			e.log.Info().Str("reason", stopping).Int("in_flight", active).Msg("closing spider: letting in-flight requests finish")
		}

		// 1. Keep the scheduler fed with start requests, lazily: at most
		// lowWater per turn, so that a spider yielding mostly duplicates
		// does not keep the loop from scheduling.
		for pulled := 0; !startsDone && stopping == "" && pulled < lowWater && e.sched.Len() < lowWater; pulled++ {
			req, err, ok := next()
			if !ok {
				startsDone = true
				break
			}
			if err != nil {
				e.stats.Inc("start_requests/invalid", 1)
				e.log.Error().Err(err).Msg("invalid start request; skipping it")
				continue
			}
			e.enqueue(ctx, req)
		}

		// 2. Start as many requests as slots, start rate and scopes allow.
		var wake time.Duration
		// A Stop from a worker (CLOSESPIDER_*) cancels stopCtx at once: check
		// it before every start, not only once per turn.
		for stopping == "" && e.stopCtx.Err() == nil && (e.maxInflight == 0 || inflight < e.maxInflight) && (maxActive == 0 || active < maxActive) {
			now := e.clock.Now()
			if w := e.starts.Wait(now); w > 0 {
				wake = w
				break
			}
			job, w, err := e.sched.Next(ctx, now)
			if err != nil {
				e.log.Error().Err(err).Msg("scheduler failed; stopping the crawl")
				e.stats.Inc("scheduler/errors", 1)
				e.Stop("scheduler_error")
				break
			}
			if job == nil {
				wake = w
				break
			}
			if !isOffline(job.Req) {
				e.starts.Take(now) // answered offline: not a start
			}
			inflight++
			active++
			e.stats.Max("engine/peak_inflight", float64(inflight))
			dispatch(job)
		}

		// 3. Done?
		if active == 0 && (stopping != "" || (startsDone && e.sched.Len() == 0)) {
			if stopping != "" {
				return stopping
			}
			return "finished"
		}

		// 4. Sleep until something happens; when more start requests are
		// wanted, only take what already happened (poll is ready).
		var poll <-chan struct{}
		if !startsDone && stopping == "" && e.sched.Len() < lowWater {
			poll = closedChan
		}
		var timerC <-chan time.Time
		if wake > 0 && stopping == "" {
			if timer == nil {
				timer = e.clock.NewTimer(wake)
			} else {
				timer.Stop()
				timer.Reset(wake)
			}
			timerC = timer.C()
		}
		// A scope can free up without an event here (a download outside
		// the scheduler, a shortened delay): the scheduler says so.
		var changed <-chan struct{}
		if n, ok := e.sched.(scheduler.Notifier); ok && stopping == "" && (e.maxInflight == 0 || inflight < e.maxInflight) {
			changed = n.Changed()
		}
		select {
		case ev := <-e.events:
			// Drain what is already there before scheduling again.
			for {
				switch ev.kind {
				case evRequest:
					e.enqueue(ctx, ev.req)
				case evDownloaded:
					inflight--
				case evFinished:
					active--
					if ev.ack {
						if err := e.sched.Done(ctx, ev.job); err != nil {
							e.log.Error().Err(err).Str("url", ev.job.Req.URL.Redacted()).Msg("scheduler could not acknowledge a finished request")
						}
					}
				}
				select {
				case ev = <-e.events:
					continue
				default:
				}
				break
			}
		case <-timerC:
		case reason := <-e.stopCh:
			if stopping == "" {
				stopping = reason
				e.log.Info().Str("reason", reason).Int("in_flight", active).Msg("closing spider: letting in-flight requests finish")
			}
		case <-closeTimer:
			e.Stop("closespider_timeout")
		case <-done:
			done = nil
			e.Stop("shutdown")
		case <-poll:
		case <-changed:
		}
	}
}

func (e *Engine) enqueue(ctx context.Context, req *spider.Request) {
	if req == nil {
		return
	}
	ok, err := e.sched.Enqueue(ctx, req)
	if err != nil {
		e.stats.Inc("scheduler/rejected", 1)
		e.log.Error().Err(err).Str("url", req.URL.Redacted()).Msg("request rejected by the scheduler")
		return
	}
	_ = ok
}

// runKey carries the job being fetched to the innermost fetcher.
type runKey struct{}

type run struct {
	job      *scheduler.Job
	reported bool
}

// process is one job's life after the scheduler hands it out.
func (e *Engine) process(ctx context.Context, job *scheduler.Job) {
	r := &run{job: job}
	ack := true
	defer func() {
		e.events <- event{kind: evFinished, job: job, ack: ack}
	}()
	dctx := ctx // cancelled by Abort

	if !job.Admitted {
		// Engine-gated mode: wait for the scopes while holding the slot.
		n := e.waitingAdmission.Add(1)
		e.warnDelayed(n)
		// throttling_delay: once per request (copies keep the mark), before
		// the scopes are asked, so it holds no scope slot while it waits.
		if d := throttling.TakeRequestDelay(job.Req); d > 0 {
			t := e.clock.NewTimer(d)
			select {
			case <-t.C():
			case <-e.stopCtx.Done():
			}
			t.Stop()
		}
		// A graceful stop cancels the wait: the request has not started
		// yet, so it stays queued (unacknowledged) for a later run.
		sentAt, err := e.thr.Admit(e.stopCtx, job.Scopes)
		e.waitingAdmission.Add(-1)
		if err != nil {
			e.events <- event{kind: evDownloaded}
			ack = false
			return
		}
		job.SentAt, job.Admitted = sentAt, true
	}

	res, err := e.fetch.Fetch(throttling.WithSentAt(context.WithValue(dctx, runKey{}, r), job.SentAt), job.Req)
	if !r.reported {
		// A middleware answered without downloading (cache) or dropped
		// the request: free the scopes without feedback.
		e.thr.Done(dctx, job.Req, job.Scopes, job.SentAt, nil, nil)
	}
	e.events <- event{kind: evDownloaded}

	if e.abortCtx.Err() != nil && err != nil {
		ack = false // cut short by Abort: keep it queued for the next run
		return
	}
	out := &output{e: e, ctx: ctx}
	var resched *middleware.RescheduleError
	switch {
	case errors.As(err, &resched):
		e.stats.Inc("engine/rescheduled/"+resched.Reason, 1)
		for _, nr := range resched.Requests {
			out.Request(nr)
		}
	case err != nil:
		e.failed(ctx, job.Req, err, out)
	case res == nil:
		e.failed(ctx, job.Req, errors.New("engine: a downloader middleware returned neither a response nor an error"), out)
	default:
		if n := e.pages.Add(1); e.closePages > 0 && n >= e.closePages {
			e.Stop("closespider_pagecount")
		}
		if herr := e.handle.Handle(ctx, res, out); herr != nil {
			e.callbackError(ctx, res, herr, out)
		}
	}
	if e.abortCtx.Err() != nil {
		// Aborted while the callback ran: it may not have produced all its
		// requests, so a persistent queue keeps the job (at least once).
		ack = false
	}
}

// fetchAndReport is the innermost fetcher: the real download, reported to
// the throttler and observers.
func (e *Engine) fetchAndReport(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	if miss := middleware.OfflineMiss(req); miss != nil {
		// It skipped throttling on a promise to be answered offline: it
		// must not reach the network, so it goes back through throttling.
		return nil, miss
	}
	r, _ := ctx.Value(runKey{}).(*run)
	var scopes throttling.Scopes
	var sentAt time.Time
	if r != nil {
		scopes, sentAt = r.job.Scopes, r.job.SentAt
	}
	for _, o := range e.observers {
		o.RequestStarted(sentAt, req, scopes)
	}
	e.cRequests.Add(1)
	if m := req.GetMethod(); m == http.MethodGet {
		e.cGets.Add(1)
	} else {
		e.stats.Inc("downloader/request_method_count/"+m, 1)
	}
	res, err := e.dl.Fetch(ctx, req)
	now := e.clock.Now()
	// Cut short by Abort, or by the caller of Download giving up: not the
	// server's doing, so no backoff feedback and no download error.
	aborted := err != nil && (e.abortCtx.Err() != nil || ctx.Err() != nil)
	if r != nil && !r.reported {
		r.reported = true
		if aborted {
			e.thr.Done(ctx, req, scopes, sentAt, nil, nil)
		} else {
			e.thr.Done(ctx, req, scopes, sentAt, res, err)
		}
	}
	for _, o := range e.observers {
		o.RequestFinished(now, req, scopes, res, err)
	}
	if err != nil {
		if !aborted {
			kind := errkind.Of(err)
			if kind == "" {
				kind = "other"
			}
			e.cExceptions.Add(1)
			e.stats.Inc("downloader/exception_type_count/"+kind, 1)
		}
		return nil, err
	}
	e.cResponses.Add(1)
	e.stats.Inc(statusKey(res.Status), 1)
	e.cBytes.Add(float64(len(res.Body)))
	if res.Status >= 200 && res.Status < 300 {
		e.cOK.Add(1)
	}
	return res, nil
}

// Download fetches req outside the scheduler: it waits for the start rate
// and the request's scopes (holding no global slot), then goes through the
// downloader middlewares. Redirects and retries answered by middlewares are
// followed here, up to 10 hops. Used for robots.txt and inline requests.
func (e *Engine) Download(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	for range 10 {
		scopes, err := e.gate.Scopes(ctx, req)
		if err != nil {
			return nil, err
		}
		for !isOffline(req) {
			w := e.starts.Wait(e.clock.Now())
			if w == 0 {
				break
			}
			t := e.clock.NewTimer(w)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C():
			}
		}
		if !isOffline(req) {
			e.starts.Take(e.clock.Now())
		}
		n := e.waitingAdmission.Add(1)
		e.warnDelayed(n)
		sentAt, err := e.thr.Admit(ctx, scopes)
		e.waitingAdmission.Add(-1)
		if err != nil {
			return nil, err
		}
		r := &run{job: &scheduler.Job{Req: req, Scopes: scopes, Admitted: true, SentAt: sentAt}}
		res, err := e.fetch.Fetch(throttling.WithSentAt(context.WithValue(ctx, runKey{}, r), sentAt), req)
		if !r.reported {
			e.thr.Done(ctx, req, scopes, sentAt, nil, nil)
		}
		var resched *middleware.RescheduleError
		if errors.As(err, &resched) && len(resched.Requests) == 1 {
			req = resched.Requests[0]
			continue
		}
		return res, err
	}
	return nil, fmt.Errorf("download of %s: too many redirects or retries", req)
}

func (e *Engine) warnDelayed(n int64) {
	th := int64(e.set.Int("DELAYED_REQUESTS_WARN_THRESHOLD"))
	if th > 0 && n >= th && e.delayedWarned.CompareAndSwap(false, true) {
		e.log.Warn().Int64("held_back", n).Int64("threshold", th).
			Msg("many requests are held back by throttling while holding a slot or outside the scheduler; " +
				"consider SCHEDULER: ThrottlingAwareScheduler, which keeps waiting requests in the queue instead")
	}
}

// callback is the innermost spider handler: the request's callback, with
// panics turned into errors carrying the stack.
func (e *Engine) callback(ctx context.Context, res *spider.Response, out spider.Output) (err error) {
	defer func() {
		if v := recover(); v != nil {
			e.stats.Inc("spider_exceptions/panic", 1)
			err = &CallbackPanic{Value: v, Stack: debug.Stack()}
		}
	}()
	if res == nil || res.Request == nil {
		return errors.New("engine: a middleware passed on a response without its request")
	}
	cb, _, err := spider.Callbacks(e.sp, res.Request)
	if err != nil {
		return err
	}
	return cb(ctx, res, out)
}

// CallbackPanic is the error a panicking callback turns into.
type CallbackPanic struct {
	Value any
	Stack []byte
}

func (p *CallbackPanic) Error() string { return fmt.Sprintf("callback panicked: %v", p.Value) }

func (e *Engine) callbackError(ctx context.Context, res *spider.Response, err error, out spider.Output) {
	var drop *middleware.DropError
	if errors.As(err, &drop) {
		e.dropped(ctx, res.Request, drop, out)
		return
	}
	e.stats.Inc("spider_exceptions/count", 1)
	ev := e.log.Error().Err(err).Str("url", res.URL.Redacted())
	var p *CallbackPanic
	if errors.As(err, &p) {
		ev = ev.Str("stack", string(p.Stack))
	}
	ev.Msg("callback failed")
	if n := e.errs.Add(1); e.closeErrors > 0 && n >= e.closeErrors {
		e.Stop("closespider_errorcount")
	}
}

func (e *Engine) failed(ctx context.Context, req *spider.Request, err error, out spider.Output) {
	var drop *middleware.DropError
	if errors.As(err, &drop) {
		e.dropped(ctx, req, drop, out)
		return
	}
	e.log.Warn().Err(err).Str("url", req.URL.Redacted()).Msg("download failed")
	e.errback(ctx, req, err, out)
}

func (e *Engine) dropped(ctx context.Context, req *spider.Request, drop *middleware.DropError, out spider.Output) {
	e.stats.Inc("engine/dropped/"+drop.Reason, 1)
	e.log.Debug().Str("url", req.URL.Redacted()).Str("reason", drop.Reason).Msg("request dropped")
	e.errback(ctx, req, drop, out)
}

func (e *Engine) errback(ctx context.Context, req *spider.Request, err error, out spider.Output) {
	_, eb, rerr := spider.Callbacks(e.sp, req)
	if rerr != nil || eb == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			e.stats.Inc("spider_exceptions/panic", 1)
			e.log.Error().Interface("panic", v).Str("stack", string(debug.Stack())).Str("url", req.URL.Redacted()).Msg("errback panicked")
		}
	}()
	if ebErr := eb(ctx, req, err, out); ebErr != nil {
		e.stats.Inc("spider_exceptions/count", 1)
		e.log.Error().Err(ebErr).Str("url", req.URL.Redacted()).Msg("errback failed")
	}
}

// processItem runs item through the pipelines.
func (e *Engine) processItem(ctx context.Context, item any) {
	e.itemSem <- struct{}{}
	defer func() { <-e.itemSem }()
	for _, p := range e.pipes {
		var err error
		item, err = safeProcess(ctx, p, item)
		if err != nil {
			reason := pipeline.Reason(err)
			e.stats.Inc("item_dropped_count", 1)
			e.stats.Inc("item_dropped_reasons_count/"+reason, 1)
			if reason == "error" {
				e.log.Error().Err(err).Str("pipeline", p.Name).Msg("item pipeline failed; item dropped")
			}
			return
		}
		if item == nil {
			e.stats.Inc("item_dropped_count", 1)
			return
		}
	}
	e.stats.Inc("item_scraped_count", 1)
	if n := e.items.Add(1); e.closeItems > 0 && n >= e.closeItems {
		e.Stop("closespider_itemcount")
	}
}

func safeProcess(ctx context.Context, p pipeline.Named, item any) (out any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("item pipeline %s panicked: %v\n%s", p.Name, v, debug.Stack())
		}
	}()
	return p.ProcessItem(ctx, item)
}

func (e *Engine) finishStats(elapsed time.Duration, reason string) {
	secs := elapsed.Seconds()
	e.stats.Set("elapsed_time_seconds", secs)
	e.stats.Set("finish_time", float64(e.clock.Now().Unix()))
	if secs > 0 {
		ok := e.stats.Get("downloader/response_ok_count")
		completed := e.stats.Get("downloader/response_count") + e.stats.Get("downloader/exception_count")
		e.stats.Set("ok_per_second", ok/secs)
		e.stats.Set("completed_per_second", completed/secs)
	}
	e.log.Info().Str("reason", reason).Dur("elapsed", elapsed).Msg("spider closed")
}

// output is the Output given to callbacks and errbacks.
type output struct {
	e   *Engine
	ctx context.Context
}

func (o *output) Item(item any) {
	if item == nil {
		return
	}
	o.e.processItem(o.ctx, item)
}

func (o *output) Request(req *spider.Request) {
	if req == nil {
		return
	}
	o.e.events <- event{kind: evRequest, req: req}
}

func (o *output) Follow(res *spider.Response, ref string, cb spider.Callback) {
	req, err := res.Follow(ref, cb)
	if err != nil {
		o.e.stats.Inc("engine/invalid_links", 1)
		o.e.log.Debug().Err(err).Msg("skipping invalid link")
		return
	}
	o.Request(req)
}

func (o *output) FollowAll(res *spider.Response, refs any, cb spider.Callback) {
	reqs, errs := res.FollowAll(refs, cb)
	for _, err := range errs {
		o.e.stats.Inc("engine/invalid_links", 1)
		o.e.log.Debug().Err(err).Msg("skipping invalid link")
	}
	for _, r := range reqs {
		o.Request(r)
	}
}

// offlineThrottler is the throttler as the scheduler sees it, except that a
// request a downloader middleware promises to answer without sending it (a
// fresh HTTP cache entry) gets no throttling scopes: it neither waits for
// nor counts against any scope. The promise is checked again just before
// the network (middleware.OfflineMiss).
type offlineThrottler struct {
	*throttling.Throttler
	chain *middleware.DownloaderChain
}

// Scopes implements scheduler.Throttler.
func (g offlineThrottler) Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error) {
	if g.chain.AnswerOffline(ctx, req) {
		return nil, nil
	}
	return g.Throttler.Scopes(ctx, req)
}

func isOffline(req *spider.Request) bool {
	v, _ := req.Get(middleware.MetaOffline).(bool)
	return v
}

// statusKeys are the stats keys of the statuses 100 to 599, built once so
// that counting a response allocates nothing.
var statusKeys = func() []string {
	keys := make([]string, 600)
	for i := 100; i < 600; i++ {
		keys[i] = "downloader/response_status_count/" + strconv.Itoa(i)
	}
	return keys
}()

func statusKey(code int) string {
	if code >= 100 && code < 600 {
		return statusKeys[code]
	}
	return "downloader/response_status_count/" + strconv.Itoa(code)
}

// closedChan is always ready.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// mergeCancel returns a context that is done when either a or b is.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}
