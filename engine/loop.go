package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/scheduler"
	"github.com/gocrawl/gocrawl/spider"
)

// This file is the engine's loop (steps 1, 2 and 5 of the package doc).
// One goroutine runs it; it alone calls Scheduler.Enqueue, Next and Done
// and counts the jobs it started and finished. Workers (download.go,
// scrape.go) talk to it through events (a callback's requests, a job's
// completion), and count the downloads that freed their global slot in
// Engine.downloaded (waking the loop only when it waits for a slot).

type evKind uint8

const (
	evRequest  evKind = iota // a callback produced requests
	evFinished               // a job is fully processed
)

type event struct {
	kind evKind
	req  *spider.Request   // evRequest: one request to enqueue,
	reqs []*spider.Request // or several (FollowAll)
	job  *scheduler.Job
	ack  bool // evFinished: acknowledge the job to the scheduler
}

// loop is the engine: every turn runs the numbered steps below, each in its
// own method of loopState, until nothing is queued or running or a stop
// has let the in-flight jobs finish. It returns the reason the crawl ended.
// ctx is the work context; done signals a graceful stop (Run's ctx).
func (e *Engine) loop(ctx context.Context, done <-chan struct{}) string {
	l := e.newLoop(ctx, done)
	defer l.close()
	for {
		l.takeStop()                // 0. a stop requested since the last turn
		l.feedStarts()              // 1. start requests into the scheduler
		l.flush()                   // 1b. what the turn recorded reaches the disk
		wakeAt := l.startRequests() // 2. start what slots, rate and scopes allow
		if reason, ok := l.done(); ok {
			return reason // 3. nothing queued or running (or stopped)
		}
		l.adaptProcs()  // 3b. GOMAXPROCS follows the CPU the crawl uses
		l.sleep(wakeAt) // 4. wait for an event, a timer or a stop
	}
}

// loopState is what the loop keeps between turns. Only the loop goroutine
// touches it.
type loopState struct {
	e   *Engine
	ctx context.Context // the work context: cancelled by Abort only
	// runDone is Run's ctx.Done(), nil once it has been turned into Stop.
	runDone <-chan struct{}

	// flusher is the scheduler when its storage groups writes (JOBDIR,
	// or the spilled part of a queue without it).
	flusher scheduler.Flusher

	next       func() (*spider.Request, error, bool) // pulls spider.Start
	stopStarts func()
	startsDone bool // spider.Start has no more requests
	sawStart   bool // the first start request was shown to the middlewares

	// wait and wire are the contexts of every job's download: wait (what
	// the middlewares wait for, robots.txt) ends at a graceful stop, wire
	// (the download itself) at the end of SHUTDOWN_GRACE; both also end
	// with ctx (Abort). Made once per crawl: merged per job they cost
	// about ten allocations and four registrations on crawl-wide
	// contexts per request.
	wait, wire       context.Context
	endWait, endWire context.CancelFunc

	// Jobs run on reused worker goroutines: a fresh goroutine per request
	// would grow its stack through the middleware chains every time.
	work    chan *scheduler.Job
	workers sync.WaitGroup

	// lowWater is the queue length below which start requests are pulled.
	// Above it they are still pulled while fewer than lowWater of those
	// pulled wait in the queue (pendingStarts): a queue full of requests
	// waiting out their host's delay (the pages callbacks found) must not
	// keep the seeds of idle hosts waiting, and the start requests held
	// in memory stay bounded all the same.
	lowWater int
	// pendingStarts are the start requests queued and not yet started,
	// by identity (a queue that stores requests elsewhere hands back
	// copies: those are never matched, and pulling falls back to the
	// queue's length once lowWater of them are counted).
	pendingStarts map[*spider.Request]struct{}
	// starved: the latest turn left a slot free with nothing ready in the
	// queue. Start requests are then pulled (up to the free slots a turn)
	// while the queue is below startsCap, even with lowWater of them
	// waiting: those wait for a host that something else holds back.
	starved   bool
	startsCap int
	// maxActive caps the jobs between download and acknowledgement (0 =
	// no cap). Callbacks run after their slot is freed, so slow callbacks
	// slow the crawl down instead of piling up responses in memory.
	maxActive int

	started  int    // jobs dispatched; inflight() of them hold a global slot
	active   int    // jobs not yet finished (download + callback)
	stopping string // the stop's reason once one is under way

	timer   clock.Timer      // wakes the loop for the scheduler or start rate
	timerAt time.Time        // when timer fires, if it is armed
	closeT  clock.Timer      // CLOSESPIDER_TIMEOUT, or nil
	closeC  <-chan time.Time // closeT's channel, nil without it
}

func (e *Engine) newLoop(ctx context.Context, done <-chan struct{}) *loopState {
	l := &loopState{e: e, ctx: ctx, runDone: done, work: make(chan *scheduler.Job)}
	l.wait, l.endWait = mergeCancel(ctx, e.stopCtx)
	l.wire, l.endWire = mergeCancel(ctx, e.graceCtx)
	starts := e.startReqs
	if starts == nil {
		starts = e.sp.Start(ctx)
	}
	if e.rc != nil {
		starts = e.rc.starts(ctx, starts)
	}
	l.next, l.stopStarts = iter.Pull2(starts)
	l.flusher, _ = e.sched.(scheduler.Flusher)
	l.lowWater = max(4*e.maxInflight, 256)
	l.pendingStarts = map[*spider.Request]struct{}{}
	l.startsCap = startsCapFactor * l.lowWater
	if e.maxInflight > 0 {
		l.maxActive = 2*e.maxInflight + 16
	}
	if d := e.set.Seconds("CLOSESPIDER_TIMEOUT"); d > 0 {
		l.closeT = e.clock.NewTimer(d)
		l.closeC = l.closeT.C()
	}
	return l
}

// close stops the timers, lets the idle workers exit (every job is
// finished when the loop returns) and releases spider.Start.
func (l *loopState) close() {
	if l.closeT != nil {
		l.closeT.Stop()
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	close(l.work)
	l.workers.Wait()
	l.endWait()
	l.endWire()
	l.stopStarts()
}

// takeStop is step 0: a stop requested since the last turn takes effect
// before anything else starts. Stop() cancels stopCtx synchronously, and a
// cancelled Run ctx is turned into Stop here.
func (l *loopState) takeStop() {
	select {
	case <-l.runDone:
		l.shutdown()
	default:
	}
	if l.stopping == "" && l.e.stopCtx.Err() != nil {
		l.beginStop(<-l.e.stopCh)
	}
}

// shutdown turns the cancellation of Run's ctx into Stop("shutdown").
func (l *loopState) shutdown() {
	l.runDone = nil
	l.e.Stop("shutdown")
}

// beginStop records the reason of the first stop; later ones change nothing.
func (l *loopState) beginStop(reason string) {
	if l.stopping != "" {
		return
	}
	l.stopping = reason
	l.e.log.Info().Str("reason", reason).Int("in_flight", l.active).Msg("closing spider: letting in-flight requests finish")
}

// startsCapFactor bounds the queue start requests are pulled into while
// the scheduler is starved, as a multiple of lowWater (16 × 1,024 queued
// requests at CONCURRENT_REQUESTS 256).
const startsCapFactor = 16

// feedStarts is step 1: it keeps the scheduler fed with start requests,
// lazily: at most lowWater per turn (the free slots when only starvation
// asks for them), so that a spider yielding mostly duplicates does not
// keep the loop from scheduling.
func (l *loopState) feedStarts() {
	e := l.e
	limit := l.lowWater
	if !l.belowWater() {
		limit = l.freeSlots()
	}
	defer func() { l.starved = false }() // until a turn finds nothing ready again
	for pulled := 0; l.wantStarts() && pulled < limit; pulled++ {
		req, err, ok := l.next()
		if !ok {
			l.startsDone = true
			if e.shared != nil {
				e.shared.Seeded(l.ctx)
			}
			return
		}
		if err != nil {
			e.stats.Inc("start_requests/invalid", 1)
			e.log.Error().Err(err).Msg("invalid start request; skipping it")
			continue
		}
		if !l.sawStart && req != nil && req.URL != nil {
			l.sawStart = true
			e.fetch.ObserveStart(req)
		}
		if e.enqueue(l.ctx, req) {
			l.pendingStarts[req] = struct{}{}
		}
	}
}

// started forgets a started job's request as a pending start request.
func (l *loopState) startedJob(job *scheduler.Job) {
	if len(l.pendingStarts) > 0 {
		delete(l.pendingStarts, job.Req)
	}
}

// wantStarts reports whether start requests should be pulled now: some
// are left, no stop is under way, in a shared job this worker is the
// seeder, and either the queue is below its low-water mark, or fewer than
// lowWater start requests wait in it, or the scheduler is starved (a free
// slot and nothing ready) with the queue below startsCap.
func (l *loopState) wantStarts() bool {
	e := l.e
	if l.startsDone || l.stopping != "" || e.shared != nil && !e.shared.Seeding() {
		return false
	}
	return l.belowWater() || l.starved && l.freeSlots() > 0 && e.sched.Len() < l.startsCap
}

// belowWater reports whether start requests are wanted whatever the
// scheduler is doing: the queue below lowWater, or fewer than lowWater of
// the start requests pulled still waiting in it.
func (l *loopState) belowWater() bool {
	return len(l.pendingStarts) < l.lowWater || l.e.sched.Len() < l.lowWater
}

// freeSlots is how many more downloads the global limit allows now
// (lowWater when there is none).
func (l *loopState) freeSlots() int {
	if l.e.maxInflight == 0 {
		return l.lowWater
	}
	return max(l.e.maxInflight-l.inflight(), 0)
}

// inflight is the number of downloads holding a global slot: the jobs
// dispatched less the downloads over (Engine.freeSlot).
func (l *loopState) inflight() int { return l.started - int(l.e.downloaded.Load()) }

// flush is step 1b: with a scheduler whose storage groups its writes
// (JOBDIR; a queue that spilled to disk, where nothing needs to last),
// everything recorded since the last turn (the requests callbacks
// produced, their fingerprints, the acknowledgements of finished jobs, the
// start requests just fed) is committed as one write before anything new
// starts. Writes reach Pebble in order (the store may commit part of a
// turn early, before it reads the disk), so a crash never keeps an
// acknowledgement without the requests it implies, and never loses more
// acknowledgements than there were jobs unfinished (maxActive), as when
// each acknowledgement was written alone.
func (l *loopState) flush() {
	if l.flusher == nil {
		return
	}
	if err := l.flusher.Flush(l.ctx); err != nil {
		l.e.fail(l.e.storageReason(err), fmt.Errorf("scheduler: writing the queue: %w", err))
	}
}

// startRequests is step 2: it starts as many requests as slots, start rate
// and scopes allow, each on a worker. It returns when the start rate or
// the scheduler expects another one to be possible (zero: when something
// happens).
func (l *loopState) startRequests() (wakeAt time.Time) {
	e := l.e
	if b, ok := e.sched.(scheduler.Batcher); ok && !e.starts.Limits() {
		return l.startBatches(b)
	}
	for l.canStart() {
		now := e.clock.Now()
		if w := e.starts.Wait(now); w > 0 {
			return now.Add(w)
		}
		job, w, err := e.sched.Next(l.ctx, now)
		if err != nil {
			e.stats.Inc("scheduler/errors", 1)
			e.fail(e.storageReason(err), fmt.Errorf("scheduler: %w", err))
			return time.Time{}
		}
		if job == nil {
			l.starved = true // a slot is free and nothing queued is ready
			return wakeTime(now, w)
		}
		if !isOffline(job.Req) {
			e.starts.Take(now) // answered offline: not a start
		}
		l.started++
		l.active++
		e.stats.Max("engine/peak_inflight", float64(l.inflight()))
		l.startedJob(job)
		l.dispatch(job)
	}
	return time.Time{}
}

// wakeTime is the time a wait of w from now ends, zero for none.
func wakeTime(now time.Time, w time.Duration) time.Time {
	if w <= 0 {
		return time.Time{}
	}
	return now.Add(w)
}

// startBatches is startRequests for a scheduler that hands out several
// jobs per call (a shared frontier, where each call is a round trip): it
// asks for as many as there are free slots.
func (l *loopState) startBatches(b scheduler.Batcher) time.Time {
	e := l.e
	for l.canStart() {
		n := 64
		if e.maxInflight > 0 {
			n = min(n, e.maxInflight-l.inflight())
		}
		if l.maxActive > 0 {
			n = min(n, l.maxActive-l.active)
		}
		now := e.clock.Now()
		jobs, w, err := b.NextN(l.ctx, now, max(n, 1))
		if err != nil {
			e.log.Error().Err(err).Msg("scheduler failed; stopping the crawl")
			e.stats.Inc("scheduler/errors", 1)
			e.Stop("scheduler_error")
			return time.Time{}
		}
		if len(jobs) == 0 {
			l.starved = true
			return wakeTime(now, w)
		}
		for _, job := range jobs {
			l.started++
			l.active++
			e.stats.Max("engine/peak_inflight", float64(l.inflight()))
			l.startedJob(job)
			l.dispatch(job)
		}
	}
	return time.Time{}
}

// canStart reports whether a job may start: no stop under way, a global
// slot (CONCURRENT_REQUESTS) free, and fewer than maxActive jobs
// unfinished. A Stop from a worker (CLOSESPIDER_*) cancels stopCtx at once,
// so it is checked before every start, not only once per turn.
func (l *loopState) canStart() bool {
	e := l.e
	return l.stopping == "" && e.stopCtx.Err() == nil && l.slotFree() &&
		(l.maxActive == 0 || l.active < l.maxActive)
}

// slotFree reports whether a global slot (CONCURRENT_REQUESTS) is free.
// When none is, it asks the workers to wake the loop when they free one
// (Engine.freeSlot) and looks once more: a slot freed just before the
// request would otherwise wake nobody.
func (l *loopState) slotFree() bool {
	e := l.e
	if e.maxInflight == 0 || l.inflight() < e.maxInflight {
		return true
	}
	e.slotWanted.Store(true)
	return l.inflight() < e.maxInflight
}

// dispatch gives job to an idle worker, or to a new one.
func (l *loopState) dispatch(job *scheduler.Job) {
	select {
	case l.work <- job: // an idle worker takes it
	default:
		l.workers.Go(func() {
			for ; job != nil; job = <-l.work {
				l.e.process(l.ctx, l.wait, l.wire, job)
			}
		})
	}
}

// done is step 3: the crawl is over when no job is unfinished and either a
// stop is under way or the start requests and the queue are exhausted (in
// a shared job: the whole job is finished, for every worker).
func (l *loopState) done() (reason string, ok bool) {
	if l.active != 0 {
		return "", false
	}
	if l.stopping != "" {
		return l.stopping, true
	}
	if sh := l.e.shared; sh != nil {
		if (l.startsDone || !sh.Seeding()) && sh.Finished() {
			return "finished", true
		}
		return "", false
	}
	if l.startsDone && l.e.sched.Len() == 0 {
		return "finished", true
	}
	return "", false
}

// adaptProcs is step 3b: with ADAPTIVE_GOMAXPROCS, the process's
// governor (package procs) samples the CPU used at most once per half
// second (real time, whatever the crawl's clock) and runs the process
// with the Ps it needs.
func (l *loopState) adaptProcs() {
	e := l.e
	if from, to := e.procs.Sample(e.procsNow()); from != to {
		e.log.Debug().Int("from", from).Int("to", to).Msg("GOMAXPROCS adapted to the CPU the crawl uses")
	}
}

// sleep is step 4: it waits until something happens: an event from a
// worker, the wake time of step 2, a stop, CLOSESPIDER_TIMEOUT, or a scope
// change the scheduler reports. When more start requests are wanted it
// only takes what already happened (poll is ready).
func (l *loopState) sleep(wakeAt time.Time) {
	e := l.e
	var poll <-chan struct{}
	if l.wantStarts() {
		poll = closedChan
	}
	var timerC <-chan time.Time
	if !wakeAt.IsZero() && l.stopping == "" {
		// Most turns want the same wake-up as the one before (the
		// earliest scope's delay has not changed): the armed timer is
		// kept, since resetting one costs the runtime a pass over the
		// process's timers (net/http's idle connections among them).
		wake := max(wakeAt.Sub(e.clock.Now()), time.Nanosecond)
		switch {
		case l.timer == nil:
			l.timer = e.clock.NewTimer(wake)
		case !wakeAt.Equal(l.timerAt):
			l.timer.Stop()
			l.timer.Reset(wake)
		}
		l.timerAt = wakeAt
		timerC = l.timer.C()
	}
	// A scope can free up without an event here (a download outside
	// the scheduler, a shortened delay): the scheduler says so.
	var changed <-chan struct{}
	if n, ok := e.sched.(scheduler.Notifier); ok && l.stopping == "" && (e.maxInflight == 0 || l.inflight() < e.maxInflight) {
		changed = n.Changed()
	}
	select {
	case ev := <-e.events:
		l.handleEvents(ev)
	case <-timerC:
		l.timerAt = time.Time{}
	case <-e.slotFreed:
	case reason := <-e.stopCh:
		l.beginStop(reason)
	case <-l.closeC:
		e.Stop("closespider_timeout")
	case <-l.runDone:
		l.shutdown()
	case <-poll:
	case <-changed:
	}
}

// handleEvents applies ev and every event already waiting, before the loop
// schedules again: requests from callbacks are enqueued (step 1), finished
// jobs are counted and acknowledged to the scheduler unless they were cut
// short (step 5).
func (l *loopState) handleEvents(ev event) {
	e := l.e
	for {
		if ev.req != nil {
			e.enqueue(l.ctx, ev.req)
		}
		for _, req := range ev.reqs {
			e.enqueue(l.ctx, req)
		}
		if ev.kind == evFinished {
			l.active--
			// After a failure that stops the crawl (the job directory or a
			// feed cannot be written) nothing more is acknowledged: those
			// jobs' items may be lost, so a resumed job fetches them again.
			if ev.ack && e.fatalErr() == nil {
				if err := e.sched.Done(l.ctx, ev.job); err != nil {
					if errors.Is(err, pqueue.ErrStorage) {
						// The job directory cannot be written (a full disk):
						// the request stays queued; stop rather than go on
						// fetching what cannot be recorded.
						e.fail(e.storageReason(err), fmt.Errorf("acknowledging %s: %w", ev.job.Req.URL.Redacted(), err))
					} else {
						e.log.Error().Err(err).Str("url", ev.job.Req.URL.Redacted()).Msg("scheduler could not acknowledge a finished request")
					}
				}
			}
		}
		select {
		case ev = <-e.events:
		default:
			return
		}
	}
}

// enqueue queues req, and reports whether it was queued (not filtered as
// a duplicate nor rejected).
func (e *Engine) enqueue(ctx context.Context, req *spider.Request) bool {
	if req == nil {
		return false
	}
	if e.rc != nil {
		e.rc.admit(ctx, req)
	}
	ok, err := e.sched.Enqueue(ctx, req)
	if err != nil {
		if errors.Is(err, pqueue.ErrStorage) {
			e.fail(e.storageReason(err), fmt.Errorf("queueing %s: %w", req.URL.Redacted(), err))
			return false
		}
		e.stats.Inc("scheduler/rejected", 1)
		e.log.Error().Err(err).Str("url", req.URL.Redacted()).Msg("request rejected by the scheduler")
		return false
	}
	return ok
}

// storageReason is the reason a scheduler error stops the crawl with:
// when the queue's storage failed, "jobdir_error" (the job directory, or
// a shared job's storage) or, in memory, "spill_error" (the temporary
// folder of SCHEDULER_MEMORY_MAX_REQUESTS); else "scheduler_error".
func (e *Engine) storageReason(err error) string {
	switch {
	case !errors.Is(err, pqueue.ErrStorage):
		return "scheduler_error"
	case e.job == nil && e.shared == nil:
		return "spill_error"
	}
	return "jobdir_error"
}

// closedChan is always ready.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
