package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
)

// Names of the registered schedulers (values of the SCHEDULER setting).
const (
	// ThrottlingAware yields only requests whose throttling scopes are
	// ready (the default): a throttled host never holds a slot.
	ThrottlingAware = "ThrottlingAwareScheduler"
	// EngineGated yields requests in priority order and lets the engine
	// wait for their scopes while holding a slot (the default mode of
	// Scrapy's throttling design, PR #6931, kept for comparison).
	EngineGated = "Scheduler"
)

// StatDepthLimited counts requests dropped because their depth exceeds
// DEPTH_LIMIT.
const StatDepthLimited = "scheduler/depth_limited"

func init() {
	Register(ThrottlingAware, func(d Deps) (Scheduler, error) { return newScheduler(d, false) })
	Register(EngineGated, func(d Deps) (Scheduler, error) { return newScheduler(d, true) })
}

// scheduler is both registered schedulers: a dupefilter, the depth rules
// and a priority queue. They differ only in the queue: the engine-gated
// Scheduler replaces the (default) ThrottlingAwarePriorityQueue by the
// plain PriorityQueue, so that switching SCHEDULER alone switches modes.
type scheduler struct {
	d          Deps
	q          pqueue.PriorityQueue
	dedup      pqueue.Deduplicator // q, when it checks fingerprints itself
	filter     *dupefilter.Filter
	flusher    pqueue.Flusher // the store, when it groups its writes
	depthLimit int
	depthPrio  int
	// depthLogged is set once a request beyond DEPTH_LIMIT was logged at
	// INFO.
	depthLogged atomic.Bool
	debug       bool
}

func newScheduler(d Deps, gated bool) (Scheduler, error) {
	st, err := openStorage(d)
	if err != nil {
		return nil, err
	}
	q := st.Frontier
	if q == nil {
		name := d.Settings.String("SCHEDULER_PRIORITY_QUEUE")
		if gated && name == "ThrottlingAwarePriorityQueue" {
			name = "PriorityQueue"
		}
		if q, err = pqueue.New(name, pqueue.Deps{Store: st.Queue, Gate: d.Throttler, Clock: d.Clock, Log: d.Log, Settings: d.Settings}); err != nil {
			return nil, err
		}
	} else if gated {
		return nil, fmt.Errorf("SCHEDULER: %s (engine-gated) cannot run on a shared frontier, whose queue admits requests itself; use %s",
			EngineGated, ThrottlingAware)
	}
	s := &scheduler{
		d:          d,
		q:          q,
		filter:     dupefilter.NewFilter(st.Seen, d.Stats, d.Log, d.Settings.Bool("DUPEFILTER_DEBUG")),
		depthLimit: d.Settings.Int("DEPTH_LIMIT"),
		depthPrio:  d.Settings.Int("DEPTH_PRIORITY"),
		debug:      d.Settings.Bool("SCHEDULER_DEBUG"),
	}
	s.flusher, _ = st.Queue.(pqueue.Flusher)
	if dd, ok := q.(pqueue.Deduplicator); ok {
		s.dedup = dd
		dd.OnPushed(s.pushed)
	}
	if bp, ok := q.(pqueue.BatchPopper); ok {
		return &batchScheduler{scheduler: s, bp: bp}, nil
	}
	return s, nil
}

// batchScheduler is the scheduler over a queue that pops several requests
// per call: it implements Batcher.
type batchScheduler struct {
	*scheduler
	bp pqueue.BatchPopper
}

// NextN implements Batcher.
func (s *batchScheduler) NextN(ctx context.Context, now time.Time, n int) ([]*Job, time.Duration, error) {
	ps, wake, err := s.bp.PopN(ctx, now, n)
	if err != nil || len(ps) == 0 {
		return nil, wake, err
	}
	jobs := make([]*Job, len(ps))
	for i, p := range ps {
		jobs[i] = s.job(p)
	}
	return jobs, 0, nil
}

// pushed hears from a deduplicating queue what became of a request.
func (s *scheduler) pushed(req *spider.Request, duplicate bool) {
	if duplicate {
		s.filter.Dropped(req, dupefilter.Of(req))
		return
	}
	s.inc("scheduler/enqueued")
}

func (s *scheduler) Open(ctx context.Context) error { return s.q.Open(ctx) }

// Enqueue applies DEPTH_LIMIT, then the dupefilter, then queues req with
// its scopes and its priority adjusted by DEPTH_PRIORITY.
func (s *scheduler) Enqueue(ctx context.Context, req *spider.Request) (bool, error) {
	if s.depthLimit > 0 && req.Depth > s.depthLimit {
		s.inc(StatDepthLimited)
		if s.depthLogged.CompareAndSwap(false, true) {
			s.d.Log.Info().Str("url", req.URL.Redacted()).Int("depth", req.Depth).Int("limit", s.depthLimit).
				Msg("ignoring request beyond DEPTH_LIMIT; further ones are logged at DEBUG and counted in the summary")
		} else {
			s.d.Log.Debug().Str("url", req.URL.Redacted()).Int("depth", req.Depth).Int("limit", s.depthLimit).Msg("ignoring request beyond DEPTH_LIMIT")
		}
		return false, nil
	}
	if s.dedup != nil {
		return s.enqueueUnique(ctx, req)
	}
	if dup, err := s.filter.Seen(ctx, req); err != nil || dup {
		return false, err
	}
	scopes, err := s.d.Throttler.Scopes(ctx, req)
	if err != nil {
		return false, s.forget(ctx, req, err)
	}
	prio := req.Priority - req.Depth*s.depthPrio
	now := s.now()
	if _, err := s.q.Push(ctx, now, req, scopes, prio); err != nil {
		return false, s.forget(ctx, req, err)
	}
	s.inc("scheduler/enqueued")
	if s.debug {
		s.d.Log.Debug().Str("url", req.URL.String()).Int("priority", prio).Strs("scopes", scopes.Names()).Msg("scheduler: enqueued")
	}
	return true, nil
}

// enqueueUnique is Enqueue for a queue that checks fingerprints itself:
// whether req is a duplicate is learnt later (pushed).
func (s *scheduler) enqueueUnique(ctx context.Context, req *spider.Request) (bool, error) {
	scopes, err := s.d.Throttler.Scopes(ctx, req)
	if err != nil {
		return false, err
	}
	prio := req.Priority - req.Depth*s.depthPrio
	if err := s.dedup.PushUnique(ctx, s.now(), req, scopes, prio, dupefilter.Of(req), !req.DontFilter); err != nil {
		return false, err
	}
	if s.debug {
		s.d.Log.Debug().Str("url", req.URL.String()).Int("priority", prio).Strs("scopes", scopes.Names()).Msg("scheduler: enqueued")
	}
	return true, nil
}

// forget takes back req's fingerprint after it failed to be queued with
// err, so that a later valid request for the same resource is not dropped.
func (s *scheduler) forget(ctx context.Context, req *spider.Request, err error) error {
	if ferr := s.filter.Forget(ctx, req); ferr != nil {
		return errors.Join(err, ferr)
	}
	return err
}

func (s *scheduler) Next(ctx context.Context, now time.Time) (*Job, time.Duration, error) {
	p, wake, err := s.q.Pop(ctx, now)
	if err != nil || p == nil {
		return nil, wake, err
	}
	return s.job(p), 0, nil
}

// job turns a popped request into a Job.
func (s *scheduler) job(p *pqueue.Popped) *Job {
	s.inc("scheduler/dequeued")
	if s.debug {
		s.d.Log.Debug().Str("url", p.Req.URL.String()).Strs("scopes", p.Scopes.Names()).Bool("admitted", p.Admitted).Msg("scheduler: dequeued")
	}
	return &Job{Req: p.Req, Scopes: p.Scopes, Admitted: p.Admitted, SentAt: p.SentAt, ID: uint64(p.ID)}
}

func (s *scheduler) Done(ctx context.Context, job *Job) error {
	return s.q.Ack(ctx, pqueue.ID(job.ID))
}

func (s *scheduler) Len() int { return s.q.Len() }

// Flush implements Flusher: the store's pending writes are committed.
// Without a grouping store it does nothing.
func (s *scheduler) Flush(ctx context.Context) error {
	if s.flusher == nil {
		return nil
	}
	return s.flusher.Flush(ctx)
}

// Changed implements Notifier: the queue's channel, or nil (never ready)
// for queues that do not track scopes.
func (s *scheduler) Changed() <-chan struct{} {
	if n, ok := s.q.(Notifier); ok {
		return n.Changed()
	}
	return nil
}

func (s *scheduler) Close(ctx context.Context) error {
	err := s.q.Close(ctx)
	if ferr := s.filter.Close(ctx); err == nil {
		err = ferr
	}
	return err
}

func (s *scheduler) now() time.Time {
	if s.d.Clock != nil {
		return s.d.Clock.Now()
	}
	return time.Now()
}

func (s *scheduler) inc(key string) {
	if s.d.Stats != nil {
		s.d.Stats.Inc(key, 1)
	}
}
