package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/downloader/netguard"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// This file is a worker's download step (step 3 of the package doc): a job
// handed out by the loop waits for throttling admission when the scheduler
// did not admit it, goes through the downloader middlewares to the
// network, and its outcome is reported to the throttler, the observers and
// the downloader/* stats. process then hands the result to scrape
// (scrape.go) and tells the loop (loop.go) when the slot is free and when
// the job is finished. Download is the same step for requests fetched
// outside the scheduler (robots.txt, inline requests).

// runKey carries the run being fetched (the job, and the context of the
// download on the wire) to the innermost fetcher.
type runKey struct{}

// errNotSent is returned for a request that reaches the network after a
// graceful stop began: it is kept queued.
var errNotSent = fmt.Errorf("%w (it stays queued)", spider.ErrStopping)

// interrupted reports whether err means that the request was not sent, or
// was cut short, because the crawl is stopping: its job is then kept
// queued instead of going to the errback.
func (e *Engine) interrupted(err error) bool {
	return err != nil && (errors.Is(err, spider.ErrStopping) ||
		(e.stopCtx.Err() != nil && errors.Is(err, context.Canceled)))
}

// run is one download of a job: reported is set once its outcome has been
// reported to the throttler, which frees its scopes. A rendered page may
// report early, from the renderer's goroutine (handler.WithReport), hence
// the atomic.
//
// wire is the context of the download itself: the middlewares run under a
// context that a graceful stop cancels (a request waiting for robots.txt
// gives up at once), while the download on the wire is cancelled only
// SHUTDOWN_GRACE later (or by Abort, or by the caller of Download).
type run struct {
	job      *scheduler.Job
	wire     context.Context
	reported atomic.Bool
}

// process is one job's life after the scheduler hands it out: admission
// (engine-gated mode), download, then scrape. It runs on a worker
// goroutine; it frees the job's global slot when the download is over
// (freeSlot) and sends the loop evFinished, with whether to acknowledge
// the job, when it is done.
// ctx is cancelled by Abort; wait also ends at a graceful stop (what the
// middlewares wait for, robots.txt), wire when SHUTDOWN_GRACE is over (the
// download itself): the loop's crawl-wide contexts.
func (e *Engine) process(ctx, wait, wire context.Context, job *scheduler.Job) {
	r := &run{job: job, wire: wire}
	ack := true
	// The body's memory is counted from its first byte until the callback
	// is done with it (DOWNLOAD_MEMORY_BUDGET).
	lease := e.dl.Budget().Lease(true)
	defer func() {
		lease.Release()
		e.events <- event{kind: evFinished, job: job, ack: ack}
	}()
	fctx := downloader.WithLease(wait, lease)

	if !job.Admitted && !e.admit(job) {
		e.freeSlot()
		ack = false
		return
	}

	var res *spider.Response
	var err error
	if fc := throttling.WithSentAt(context.WithValue(fctx, runKey{}, r), job.SentAt); e.rc != nil {
		res, err = e.rc.fetch(fc, job.Req, job.Scopes)
	} else {
		res, err = e.fetch.Fetch(fc, job.Req)
	}
	if r.reported.CompareAndSwap(false, true) {
		// A middleware answered without downloading (cache) or dropped
		// the request: free the scopes without feedback, and give the
		// request's turn of their delays back.
		e.thr.NotSent(ctx, job.Req, job.Scopes, job.SentAt)
	}
	e.freeSlot()

	if fatal, ok := errors.AsType[*middleware.FatalError](err); ok {
		// A middleware cannot go on (its archive's disk is full): the
		// crawl stops, and the job stays queued for a resume.
		e.fail(fatal.Reason, err)
		ack = false
		return
	}
	if err != nil && (e.abortCtx.Err() != nil || e.interrupted(err)) {
		// Not sent, or cut short, by Abort or a stop: keep it queued for
		// the next run, without an errback.
		ack = false
		if e.abortCtx.Err() == nil {
			e.stats.Inc("engine/kept_queued_on_stop", 1)
		}
		return
	}
	e.scrape(ctx, job.Req, res, err)
	if e.abortCtx.Err() != nil {
		// Aborted while the callback ran: it may not have produced all its
		// requests, so a persistent queue keeps the job (at least once).
		ack = false
	}
}

// freeSlot frees a job's global slot (CONCURRENT_REQUESTS) once its
// download is over, while its callback may still run. The loop counts the
// freed slots when it next looks; it is woken for them only when it waits
// for one (slotFree), so a download that ends while slots are to spare
// costs it no wake-up: the scheduler already reports the scopes it freed
// (Notifier), and evFinished follows.
func (e *Engine) freeSlot() {
	e.downloaded.Add(1)
	if e.slotWanted.Load() && e.slotWanted.CompareAndSwap(true, false) {
		select {
		case e.slotFreed <- struct{}{}:
		default:
		}
	}
}

// admit is the engine-gated mode's wait for the job's scopes, while it
// holds its global slot. It reports false when a graceful stop cut the
// wait short: the request has not started, so it stays queued
// (unacknowledged) for a later run.
func (e *Engine) admit(job *scheduler.Job) bool {
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
	sentAt, err := e.thr.Admit(e.stopCtx, job.Scopes)
	e.waitingAdmission.Add(-1)
	if err != nil {
		return false
	}
	job.SentAt, job.Admitted = sentAt, true
	return true
}

// fetchAndReport is the innermost fetcher: the real download, reported to
// the throttler and observers.
func (e *Engine) fetchAndReport(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	if miss := middleware.OfflineMiss(req); miss != nil {
		// It skipped throttling on a promise to be answered offline: it
		// must not reach the network, so it goes back through throttling.
		return nil, miss
	}
	if e.stopCtx.Err() != nil {
		return nil, errNotSent // nothing new is sent once a stop began
	}
	r, _ := ctx.Value(runKey{}).(*run)
	wire := ctx
	if r != nil && r.wire != nil {
		wire = r.wire
	}
	dctx, endDownload := mergeCancel(context.WithoutCancel(ctx), wire)
	defer endDownload()
	var scopes throttling.Scopes
	var sentAt time.Time
	if r != nil {
		scopes, sentAt = r.job.Scopes, r.job.SentAt
	}
	if len(scopes) > 0 && !sentAt.IsZero() {
		// The delay to the scopes' next request counts from the moment
		// this one reaches the wire (after a dial), not its admission.
		dctx = downloader.WithWire(dctx, func() { e.thr.Wired(scopes, sentAt) })
	}
	for _, o := range e.observers {
		o.RequestStarted(sentAt, req, scopes)
	}
	e.cRequests.Add(1)
	if m := req.EffectiveMethod(); m == http.MethodGet {
		e.cGets.Add(1)
	} else {
		e.stats.Inc("downloader/request_method_count/"+m, 1)
	}
	began := e.clock.Now()
	res, err := e.send(dctx, req, scopes, r)
	now := e.clock.Now()
	if errors.Is(err, netguard.ErrBlocked) {
		// Refused before anything was sent: no feedback, no download
		// error, a drop with its reason.
		if r != nil && r.reported.CompareAndSwap(false, true) {
			e.thr.NotSent(ctx, req, scopes, sentAt)
		}
		e.log.Warn().Str("url", req.URL.Redacted()).Err(err).Msg("request refused by the SSRF protection")
		return nil, &middleware.DropError{Reason: netguard.DropReason, Err: err}
	}
	// Cut short by Abort, by SHUTDOWN_GRACE running out, or by the caller
	// of Download giving up: not the server's doing, so no backoff
	// feedback and no download error.
	aborted := err != nil && dctx.Err() != nil
	if aborted && e.stopCtx.Err() != nil && e.abortCtx.Err() == nil {
		err = fmt.Errorf("%w: cancelled %v after the stop began (SHUTDOWN_GRACE): %w", spider.ErrStopping, e.grace, err)
	}
	if r != nil && r.reported.CompareAndSwap(false, true) {
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
	if ev := e.log.Debug(); ev.Enabled() {
		ev.Int("status", res.Status).Str("method", req.EffectiveMethod()).Str("url", req.URL.Redacted()).
			Str("referer", refererOf(req)).Int("bytes", len(res.Body)).Stringer("latency", now.Sub(began).Round(time.Microsecond)).
			Str("scope", strings.Join(scopes.Names(), " + ")).Msg("response")
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
	// Waiting ends at a graceful stop; a download on the wire gets
	// SHUTDOWN_GRACE. The caller's ctx ends both.
	wait, endWait := mergeCancel(ctx, e.stopCtx)
	defer endWait()
	wire, endWire := mergeCancel(ctx, e.graceCtx)
	defer endWire()
	stopped := func(err error) error {
		if e.stopCtx.Err() != nil && ctx.Err() == nil {
			return errNotSent
		}
		return err
	}
	for range 10 {
		if e.stopCtx.Err() != nil {
			return nil, errNotSent
		}
		scopes, err := e.gate.Scopes(wait, req)
		if err != nil {
			return nil, stopped(err)
		}
		// A rescheduled copy may ask to wait first (throttling_delay: a
		// redirect's Retry-After, every proxy of the pool resting).
		if d := throttling.TakeRequestDelay(req); d > 0 {
			t := e.clock.NewTimer(d)
			select {
			case <-wait.Done():
				t.Stop()
				return nil, stopped(wait.Err())
			case <-t.C():
			}
		}
		for !isOffline(req) {
			w := e.starts.Wait(e.clock.Now())
			if w == 0 {
				break
			}
			t := e.clock.NewTimer(w)
			select {
			case <-wait.Done():
				t.Stop()
				return nil, stopped(wait.Err())
			case <-t.C():
			}
		}
		if !isOffline(req) {
			e.starts.Take(e.clock.Now())
		}
		n := e.waitingAdmission.Add(1)
		e.warnDelayed(n)
		sentAt, err := e.thr.Admit(wait, scopes)
		e.waitingAdmission.Add(-1)
		if err != nil {
			return nil, stopped(err)
		}
		r := &run{job: &scheduler.Job{Req: req, Scopes: scopes, Admitted: true, SentAt: sentAt}, wire: wire}
		// Counted while it is read, never waiting: the caller (a callback,
		// a job waiting for robots.txt) may hold budget itself.
		lease := e.dl.Budget().Lease(false)
		fctx := downloader.WithLease(throttling.WithSentAt(context.WithValue(wait, runKey{}, r), sentAt), lease)
		res, err := e.fetch.Fetch(fctx, req)
		lease.Release()
		if r.reported.CompareAndSwap(false, true) {
			e.thr.NotSent(ctx, req, scopes, sentAt)
		}
		var resched *middleware.RescheduleError
		if errors.As(err, &resched) && len(resched.Requests) == 1 {
			req = resched.Requests[0]
			continue
		}
		if err != nil && e.interrupted(err) {
			return nil, stopped(err)
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

// refererOf is the Referer header req was sent with, "-" without one.
func refererOf(req *spider.Request) string {
	if r := req.RefererHeader(); r != "" {
		return r
	}
	return "-"
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
