package metrics

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// Recorder is an engine observer (engine.Options.Observers) that measures a
// crawl per throttling scope and globally: requests, the outcome taxonomy
// (ok, 429, other 4xx/5xx, timeouts, network errors), retries, in-flight and
// peak in-flight, the observed start rate and the time spent backing off.
//
// It is cheap on the hot path: global counters are atomics, each scope has
// its own small lock, and the scope table is a map under a read-write lock,
// written only when a scope is seen for the first time. Create it with
// NewRecorder; it is safe for concurrent use.
type Recorder struct {
	clock    clock.Clock
	backoff  map[int]bool
	scopesMu sync.RWMutex
	scopes   map[string]*scopeState
	nscopes  atomic.Int64
	started  atomic.Int64 // UnixNano of the crawl start (Begin or first start)
	finished atomic.Int64 // UnixNano of End; 0 while running

	requests, retries, responses, ok, r429, other, timeouts, netErrs, cancelled atomic.Int64
	inflight, peak                                                              atomic.Int64
	// refused counts responses with a backoff status (BACKOFF_HTTP_CODES);
	// samplePeak is the peak in flight since the last series sample.
	refused, samplePeak atomic.Int64

	mu        sync.Mutex // guards the fields below
	win       startWindows
	errKinds  map[string]int64
	statuses  map[int]int64
	lastEnd   time.Time
	firstSeen time.Time
}

// scopeState is one scope's measurements, guarded by its own lock.
type scopeState struct {
	name string

	mu                                            sync.Mutex
	requests, retries, responses, ok, r429, other int64
	timeouts, netErrs, cancelled                  int64
	inflight, peak                                int
	refused                                       int64 // backoff statuses
	samplePeak                                    int   // peak in flight since the last series sample
	win                                           startWindows
	first, lastEnd                                time.Time
	backoffSince                                  time.Time
	backoff                                       time.Duration
	statuses                                      map[int]int64
}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	// Clock defaults to the real clock. It dates the crawl's start and end
	// and starts reported without a send time.
	Clock clock.Clock
	// BackoffCodes are the statuses counted as backoff triggers when
	// deriving the time spent backing off (BACKOFF_HTTP_CODES). Download
	// errors other than cancellations always count.
	BackoffCodes []int
}

// NewRecorder returns an empty Recorder.
func NewRecorder(opts RecorderOptions) *Recorder {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	r := &Recorder{clock: opts.Clock, backoff: map[int]bool{}, errKinds: map[string]int64{}, statuses: map[int]int64{}}
	for _, c := range opts.BackoffCodes {
		r.backoff[c] = true
	}
	return r
}

// Begin marks the start of the crawl (the origin of global rates). Without
// it, the first request's start is used.
func (r *Recorder) Begin(now time.Time) { r.started.CompareAndSwap(0, now.UnixNano()) }

// End marks the end of the crawl: rates of later snapshots are computed up
// to now instead of the snapshot time.
func (r *Recorder) End(now time.Time) { r.finished.CompareAndSwap(0, now.UnixNano()) }

func (r *Recorder) scope(name string) *scopeState {
	if st := r.scopeIfAny(name); st != nil {
		return st
	}
	r.scopesMu.Lock()
	defer r.scopesMu.Unlock()
	st := r.scopes[name]
	if st == nil {
		if r.scopes == nil {
			r.scopes = map[string]*scopeState{}
		}
		st = &scopeState{name: name}
		r.scopes[name] = st
		r.nscopes.Add(1)
	}
	return st
}

// scopeIfAny returns the named scope's state, nil if never seen.
func (r *Recorder) scopeIfAny(name string) *scopeState {
	r.scopesMu.RLock()
	st := r.scopes[name]
	r.scopesMu.RUnlock()
	return st
}

// eachScope calls fn for every scope seen, in no order, outside the
// table's lock: a pass over tens of thousands of scopes must not hold up
// the first request of a new one (a waiting writer would then hold up
// every reader).
func (r *Recorder) eachScope(fn func(*scopeState)) {
	r.scopesMu.RLock()
	all := make([]*scopeState, 0, len(r.scopes))
	for _, st := range r.scopes {
		all = append(all, st)
	}
	r.scopesMu.RUnlock()
	for _, st := range all {
		fn(st)
	}
}

// forEachScope calls fn for each scope of a request; a request without
// scopes is measured under its host.
func (r *Recorder) forEachScope(req *spider.Request, scopes throttling.Scopes, fn func(*scopeState)) {
	if len(scopes) == 0 {
		fn(r.scope(req.Host()))
		return
	}
	for _, s := range scopes {
		fn(r.scope(s.Name))
	}
}

func isRetry(req *spider.Request) bool {
	switch v := req.Get(spider.MetaRetryTimes).(type) {
	case int:
		return v > 0
	case int64:
		return v > 0
	case float64:
		return v > 0
	}
	return false
}

// RequestStarted implements engine.Observer: req was admitted at now (its
// send time; the zero time means "now").
func (r *Recorder) RequestStarted(now time.Time, req *spider.Request, scopes throttling.Scopes) {
	if now.IsZero() {
		now = r.clock.Now()
	}
	r.started.CompareAndSwap(0, now.UnixNano())
	retry := isRetry(req)
	r.requests.Add(1)
	if retry {
		r.retries.Add(1)
	}
	n := r.inflight.Add(1)
	raise(&r.peak, n)
	raise(&r.samplePeak, n)
	r.mu.Lock()
	r.win.add(now)
	r.mu.Unlock()

	r.forEachScope(req, scopes, func(s *scopeState) {
		s.mu.Lock()
		s.requests++
		if retry {
			s.retries++
		}
		s.inflight++
		s.peak = max(s.peak, s.inflight)
		s.samplePeak = max(s.samplePeak, s.inflight)
		if s.first.IsZero() {
			s.first = now
		}
		s.win.add(now)
		if !s.backoffSince.IsZero() {
			if d := now.Sub(s.backoffSince); d > 0 {
				s.backoff += d
			}
			s.backoffSince = time.Time{}
		}
		s.mu.Unlock()
	})
}

// outcome classifies one finished request.
type outcome uint8

const (
	outResponse outcome = iota
	outTimeout
	outNetErr
	outCancelled
)

// RequestFinished implements engine.Observer: the request's response (any
// status) or download error arrived at now.
func (r *Recorder) RequestFinished(now time.Time, req *spider.Request, scopes throttling.Scopes, res *spider.Response, err error) {
	if now.IsZero() {
		now = r.clock.Now()
	}
	r.inflight.Add(-1)
	out, status, kind := outResponse, 0, ""
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		out = outCancelled
	case err != nil:
		kind = errkind.Of(err)
		if kind == "" {
			kind = "other"
		}
		out = outNetErr
		if errors.Is(err, errkind.DownloadTimeout) {
			out = outTimeout
		}
	case res != nil:
		status = res.Status
	default:
		out = outCancelled // neither: nothing was downloaded
	}
	refused := out == outResponse && r.backoff[status]
	trigger := out == outTimeout || out == outNetErr || refused
	if refused {
		r.refused.Add(1)
	}

	switch out {
	case outResponse:
		r.responses.Add(1)
		switch {
		case status >= 200 && status < 300:
			r.ok.Add(1)
		case status == 429:
			r.r429.Add(1)
		case status >= 400:
			r.other.Add(1)
		}
	case outTimeout:
		r.timeouts.Add(1)
	case outNetErr:
		r.netErrs.Add(1)
	case outCancelled:
		r.cancelled.Add(1)
	}
	r.mu.Lock()
	if now.After(r.lastEnd) {
		r.lastEnd = now
	}
	switch out {
	case outResponse:
		r.statuses[status]++
	case outTimeout, outNetErr:
		r.errKinds[kind]++
	}
	r.mu.Unlock()

	r.forEachScope(req, scopes, func(s *scopeState) {
		s.mu.Lock()
		s.inflight--
		if now.After(s.lastEnd) {
			s.lastEnd = now
		}
		switch out {
		case outResponse:
			s.responses++
			switch {
			case status >= 200 && status < 300:
				s.ok++
			case status == 429:
				s.r429++
			case status >= 400:
				s.other++
			}
			if s.statuses == nil {
				s.statuses = make(map[int]int64, 4)
			}
			s.statuses[status]++
			if refused {
				s.refused++
			}
		case outTimeout:
			s.timeouts++
		case outNetErr:
			s.netErrs++
		case outCancelled:
			s.cancelled++
		}
		if trigger && s.backoffSince.IsZero() {
			s.backoffSince = now
		}
		s.mu.Unlock()
	})
}

// raise sets v to n if n is larger.
func raise(v *atomic.Int64, n int64) {
	for {
		p := v.Load()
		if n <= p || v.CompareAndSwap(p, n) {
			return
		}
	}
}
