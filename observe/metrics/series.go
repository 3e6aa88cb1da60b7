package metrics

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Series is a crawl over time, for plots: the whole crawl and its busiest
// scopes, sampled at a fixed interval. It is bounded whatever the crawl's
// length and number of scopes: at most SeriesOptions.Scopes scopes have a
// series, and when a series reaches SeriesOptions.Points points, every
// series is halved by merging neighbouring points and Step doubles (a
// 10-minute crawl keeps 1 s points, a 10-hour one 64 s points).
type Series struct {
	// Start is the origin of the T columns.
	Start time.Time `json:"start"`
	// Step is the time between two points, in seconds.
	Step float64 `json:"step_seconds"`
	// Global is the whole crawl.
	Global SeriesPoints `json:"global"`
	// Scopes are the scopes with a series, most requested first. Each has
	// its own T column: it starts when the scope got its series.
	Scopes []ScopeSeries `json:"scopes"`
	// ScopesNotKept counts the scopes seen without a series of their own
	// (past the SeriesOptions.Scopes busiest, or replaced by busier ones),
	// as of the last sample.
	ScopesNotKept int `json:"scopes_not_kept,omitempty"`
}

// SeriesPoints are the columns every series has; point i covers the
// interval ending at T[i].
type SeriesPoints struct {
	// T is the end of each point's interval, in seconds since Series.Start.
	T []float64 `json:"t"`
	// OK is ok (2xx) responses per second over the interval.
	OK []float64 `json:"ok_per_second"`
	// Refused is responses per second with a backoff status
	// (BACKOFF_HTTP_CODES: 429, 503, ...), the server saying "slow down".
	Refused []float64 `json:"refused_per_second"`
	// Errors is download errors (timeouts, network errors) per second.
	Errors []float64 `json:"errors_per_second"`
	// InFlight is the most requests in flight at once during the interval.
	InFlight []float64 `json:"inflight"`
}

// ScopeSeries is one throttling scope over time: its outcomes, and the
// throttler's state at each sample, with its configured limits for
// reference.
type ScopeSeries struct {
	Scope string `json:"scope"`
	SeriesPoints
	// Delay is the scope's delay between sends, in seconds (the largest
	// sampled during the interval).
	Delay []float64 `json:"delay_seconds"`
	// Level is the backoff level (the largest sampled).
	Level []float64 `json:"backoff_level"`
	// Concurrency is the scope's concurrency limit (the smallest
	// sampled; 0 = unlimited).
	Concurrency []float64 `json:"concurrency"`
	// ConfiguredDelay and ConfiguredConcurrency are the scope's configured
	// limits (THROTTLING_SCOPES, else DOWNLOAD_DELAY and
	// CONCURRENT_REQUESTS_PER_DOMAIN), as of the last sample.
	ConfiguredDelay       float64 `json:"configured_delay_seconds"`
	ConfiguredConcurrency int     `json:"configured_concurrency"`
}

// ScopeState is what a series reads from the throttler about a scope at
// each sample.
type ScopeState struct {
	Delay                 float64 // seconds
	BackoffLevel          int
	Concurrency           int // 0 = unlimited
	ConfiguredDelay       float64
	ConfiguredConcurrency int
}

// SeriesOptions bound a SeriesRecorder.
type SeriesOptions struct {
	// Interval between samples (METRICS_SERIES_INTERVAL); default 1 s.
	Interval time.Duration
	// Scopes is how many scopes get a series of their own
	// (METRICS_SERIES_SCOPES); default 10, negative = none.
	Scopes int
	// Points bounds each series (METRICS_SERIES_POINTS); default 600,
	// at least 16.
	Points int
	// State returns the throttler's view of a scope (false when
	// unknown); nil leaves the delay, level and limits at 0.
	State func(scope string) (ScopeState, bool)
}

// SeriesRecorder samples a Recorder at a fixed interval into a Series.
// Call Sample every Interval (Monitor does) and Flush at the end; it is
// safe for concurrent use.
type SeriesRecorder struct {
	rec  *Recorder
	opts SeriesOptions

	mu         sync.Mutex
	start      time.Time
	pointStart time.Time // start of the pending point's interval
	lastSample time.Time
	stride     int // samples per point
	pending    int // samples taken for the pending point
	samples    int // samples taken
	global     seriesAcc
	out        SeriesPoints
	scopes     map[string]*scopeSeriesAcc
}

// cumulative are a series' counters since the crawl started.
type cumulative struct{ ok, refused, errors int64 }

// seriesAcc accumulates the pending point of one series.
type seriesAcc struct {
	base cumulative // counters when the pending point started
	peak float64
}

type scopeSeriesAcc struct {
	seriesAcc
	out                ScopeSeries
	requests           int64
	delay, level, conc float64
	sampled            bool
}

// NewSeriesRecorder returns a recorder of rec's series.
func NewSeriesRecorder(rec *Recorder, opts SeriesOptions) *SeriesRecorder {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Scopes == 0 {
		opts.Scopes = 10
	}
	if opts.Points == 0 {
		opts.Points = 600
	}
	opts.Points = max(opts.Points, 16)
	return &SeriesRecorder{rec: rec, opts: opts, stride: 1, scopes: map[string]*scopeSeriesAcc{}}
}

// Interval is the time between two samples.
func (s *SeriesRecorder) Interval() time.Duration { return s.opts.Interval }

// Begin sets the origin of the series (the crawl's start).
func (s *SeriesRecorder) Begin(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start.IsZero() {
		s.start, s.pointStart, s.lastSample = now, now, now
	}
}

// Sample reads the recorder and the throttler at now; every stride
// samples, it appends a point to every series.
func (s *SeriesRecorder) Sample(now time.Time) { s.sample(now, false) }

// Flush takes a last sample at now and appends the pending point even if
// it covers less than a full step (the crawl's end).
func (s *SeriesRecorder) Flush(now time.Time) { s.sample(now, true) }

func (s *SeriesRecorder) sample(now time.Time, flush bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start.IsZero() {
		s.start, s.pointStart, s.lastSample = now, now, now
	}
	r := s.rec
	s.global.peak = max(s.global.peak, float64(r.samplePeak.Swap(r.inflight.Load())))
	// Looking for newly busy scopes is one pass over every scope: each
	// sample while there are few, every scanEvery samples (and at the end)
	// on a broad crawl.
	if s.samples%scanEvery(r.nscopes.Load()) == 0 || flush {
		s.track(now)
	}
	s.samples++
	for name, a := range s.scopes {
		st := r.scopeIfAny(name)
		if st == nil {
			continue
		}
		st.mu.Lock()
		a.peak = max(a.peak, float64(st.samplePeak))
		a.requests = st.requests
		st.samplePeak = st.inflight
		st.mu.Unlock()
		if s.opts.State != nil {
			if v, ok := s.opts.State(name); ok {
				if !a.sampled {
					a.delay, a.level, a.conc = v.Delay, float64(v.BackoffLevel), float64(v.Concurrency)
				} else {
					a.delay, a.level, a.conc = max(a.delay, v.Delay), max(a.level, float64(v.BackoffLevel)), min(a.conc, float64(v.Concurrency))
				}
				a.out.ConfiguredDelay, a.out.ConfiguredConcurrency = v.ConfiguredDelay, v.ConfiguredConcurrency
				a.sampled = true
			}
		}
	}
	s.lastSample = now
	s.pending++
	if s.pending < s.stride && !flush {
		return
	}
	if !now.After(s.pointStart) {
		return // nothing to divide by (a flush right after a point)
	}
	secs := now.Sub(s.pointStart).Seconds()
	t := round3(now.Sub(s.start).Seconds())
	g := r.cumulative()
	appendPoint(&s.out, &s.global, g, t, secs)
	for name, a := range s.scopes {
		st := r.scopeIfAny(name)
		if st == nil {
			continue
		}
		appendPoint(&a.out.SeriesPoints, &a.seriesAcc, st.cumulative(), t, secs)
		a.out.Delay = append(a.out.Delay, round3(a.delay))
		a.out.Level = append(a.out.Level, a.level)
		a.out.Concurrency = append(a.out.Concurrency, a.conc)
		a.sampled = false
	}
	s.pointStart, s.pending = now, 0
	if len(s.out.T) >= s.opts.Points {
		s.halve()
	}
}

// appendPoint adds the point of acc's pending interval (secs long, ending
// at t) with counters now at c, and starts the next one.
func appendPoint(p *SeriesPoints, acc *seriesAcc, c cumulative, t, secs float64) {
	p.T = append(p.T, t)
	p.OK = append(p.OK, round3(float64(c.ok-acc.base.ok)/secs))
	p.Refused = append(p.Refused, round3(float64(c.refused-acc.base.refused)/secs))
	p.Errors = append(p.Errors, round3(float64(c.errors-acc.base.errors)/secs))
	p.InFlight = append(p.InFlight, acc.peak)
	acc.base, acc.peak = c, 0
}

// track updates which scopes have a series: the busiest by requests. A
// scope keeps its series unless a scope with at least twice its requests
// (and 10 more) needs the room, so that series do not flap between scopes
// of similar traffic; a replaced scope's series is dropped. It costs one
// pass over the recorder's scopes, keeping only the few candidates that
// could get a series (no sort of every scope); sample runs it every
// scanEvery samples.
func (s *SeriesRecorder) track(now time.Time) {
	if s.opts.Scopes < 0 {
		return
	}
	type cand struct {
		name     string
		requests int64
		first    time.Time
	}
	// need is the fewest requests an untracked scope must have to take
	// the place of the least requested tracked one, from the counts of the
	// last pass (refreshed below before any replacement).
	need := int64(0)
	if len(s.scopes) >= s.opts.Scopes {
		least := int64(math.MaxInt64)
		for _, a := range s.scopes {
			least = min(least, a.requests)
		}
		need = max(2*least, least+10)
	}
	// top holds the best untracked candidates, most requests first, at
	// most opts.Scopes of them.
	top := make([]cand, 0, s.opts.Scopes+1)
	s.rec.eachScope(func(st *scopeState) {
		st.mu.Lock()
		n, first := st.requests, st.first
		st.mu.Unlock()
		if a, ok := s.scopes[st.name]; ok {
			a.requests = n
			return
		}
		if n < need || len(top) == s.opts.Scopes && !better(n, st.name, top[len(top)-1].requests, top[len(top)-1].name) {
			return
		}
		i := len(top)
		for i > 0 && better(n, st.name, top[i-1].requests, top[i-1].name) {
			i--
		}
		top = slices.Insert(top, i, cand{st.name, n, first})
		if len(top) > s.opts.Scopes {
			top = top[:s.opts.Scopes]
		}
	})
	for _, c := range top {
		if len(s.scopes) >= s.opts.Scopes {
			victim, vn := "", int64(math.MaxInt64)
			for name, a := range s.scopes {
				if a.requests < vn || a.requests == vn && name > victim {
					victim, vn = name, a.requests
				}
			}
			if c.requests < 2*vn || c.requests < vn+10 {
				continue
			}
			delete(s.scopes, victim)
		}
		a := &scopeSeriesAcc{out: ScopeSeries{Scope: c.name}, requests: c.requests}
		// A scope that started after the pending point's start is counted
		// from zero; an older one from now on.
		if c.first.Before(s.pointStart) {
			if st := s.rec.scopeIfAny(c.name); st != nil {
				a.base = st.cumulative()
			}
		}
		s.scopes[c.name] = a
	}
}

// scanEvery is how many samples go between two searches for newly busy
// scopes, for a crawl that has touched n scopes.
func scanEvery(n int64) int {
	if n <= 10000 {
		return 1
	}
	return 10
}

// better orders candidates: more requests first, then by name.
func better(n int64, name string, m int64, other string) bool {
	return n > m || n == m && name < other
}

// halve merges neighbouring points of every series and doubles the stride.
func (s *SeriesRecorder) halve() {
	halvePoints(&s.out)
	for _, a := range s.scopes {
		halvePoints(&a.out.SeriesPoints)
		a.out.Delay = halveCol(a.out.Delay, math.Max)
		a.out.Level = halveCol(a.out.Level, math.Max)
		a.out.Concurrency = halveCol(a.out.Concurrency, math.Min)
	}
	s.stride *= 2
}

func halvePoints(p *SeriesPoints) {
	p.T = halveCol(p.T, func(_, b float64) float64 { return b })
	mean := func(a, b float64) float64 { return round3((a + b) / 2) }
	p.OK = halveCol(p.OK, mean)
	p.Refused = halveCol(p.Refused, mean)
	p.Errors = halveCol(p.Errors, mean)
	p.InFlight = halveCol(p.InFlight, math.Max)
}

// halveCol merges pairs (0,1), (2,3), ... of col with merge; an odd last
// point stays as is.
func halveCol(col []float64, merge func(a, b float64) float64) []float64 {
	out := col[:0]
	for i := 0; i < len(col); i += 2 {
		if i+1 == len(col) {
			out = append(out, col[i])
			break
		}
		out = append(out, merge(col[i], col[i+1]))
	}
	return out
}

// Series returns a copy of the series so far, scopes most requested
// first. A scope's series starts when it got one (its T column says when).
func (s *SeriesRecorder) Series() Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Series{Start: s.start, Step: round3(s.opts.Interval.Seconds() * float64(s.stride)), Global: clonePoints(s.out),
		ScopesNotKept: max(0, int(s.rec.nscopes.Load())-len(s.scopes))}
	for _, a := range s.scopes {
		sc := a.out
		sc.SeriesPoints = clonePoints(a.out.SeriesPoints)
		sc.Delay, sc.Level, sc.Concurrency = slices.Clone(sc.Delay), slices.Clone(sc.Level), slices.Clone(sc.Concurrency)
		out.Scopes = append(out.Scopes, sc)
	}
	slices.SortFunc(out.Scopes, func(a, b ScopeSeries) int {
		ra, rb := s.scopes[a.Scope].requests, s.scopes[b.Scope].requests
		if ra != rb {
			return int(rb - ra)
		}
		return strings.Compare(a.Scope, b.Scope)
	})
	return out
}

func clonePoints(p SeriesPoints) SeriesPoints {
	return SeriesPoints{T: slices.Clone(p.T), OK: slices.Clone(p.OK), Refused: slices.Clone(p.Refused),
		Errors: slices.Clone(p.Errors), InFlight: slices.Clone(p.InFlight)}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// cumulative returns the crawl's counters for the series.
func (r *Recorder) cumulative() cumulative {
	return cumulative{ok: r.ok.Load(), refused: r.refused.Load(), errors: r.timeouts.Load() + r.netErrs.Load()}
}

func (s *scopeState) cumulative() cumulative {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cumulative{ok: s.ok, refused: s.refused, errors: s.timeouts + s.netErrs}
}
