package metrics

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/throttling"
)

// Counts are the measurements of one scope, or of the whole crawl.
type Counts struct {
	// Requests sent (every real HTTP request: first attempts, retries and
	// redirects).
	Requests int64 `json:"requests"`
	// Retries are the requests with retry_times > 0 (not first attempts).
	Retries int64 `json:"retries"`
	// Responses received, any status.
	Responses int64 `json:"responses"`
	// OK responses (2xx): the useful work.
	OK int64 `json:"ok"`
	// HTTP429 responses (Too Many Requests).
	HTTP429 int64 `json:"http_429"`
	// OtherErrors are the other 4xx and 5xx responses.
	OtherErrors int64 `json:"other_4xx_5xx"`
	// Timeouts are downloads that failed with DownloadTimeoutError.
	Timeouts int64 `json:"timeouts"`
	// NetworkErrors are the other download errors (refused, reset, data
	// loss, ...), by kind in Snapshot.ErrorKinds.
	NetworkErrors int64 `json:"network_errors"`
	// Cancelled downloads (crawl aborted) are not outcomes of the server.
	Cancelled int64 `json:"cancelled"`

	// InFlight is the number of requests sent and not finished at the
	// snapshot; PeakInFlight the most at any time.
	InFlight     int64 `json:"inflight"`
	PeakInFlight int64 `json:"peak_inflight"`

	// The observed start rate: most starts in any 1 s and any 100 ms
	// window, and starts in the first 500 ms (after the first start).
	MaxStarts1s      int `json:"max_starts_1s"`
	MaxStarts100ms   int `json:"max_starts_100ms"`
	StartsFirst500ms int `json:"starts_first_500ms"`

	// First is the first start, Last the last finish (zero when none).
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Seconds is the duration the rates are computed over: for a scope,
	// from its first start to its last finish (or the snapshot time while
	// requests are in flight); for the crawl, from its start to its end
	// (or the snapshot time).
	Seconds float64 `json:"seconds"`
	// OKPerSecond is OK / Seconds: useful throughput.
	OKPerSecond float64 `json:"ok_per_second"`
	// CompletedPerSecond is Completed() / Seconds: a fast 429 counts too,
	// so compare it with OKPerSecond, never alone.
	CompletedPerSecond float64 `json:"completed_per_second"`

	// Statuses counts responses by status code.
	Statuses map[int]int64 `json:"statuses,omitempty"`
}

// Completed returns the requests that ended with a response or a download
// error (cancellations excluded).
func (c Counts) Completed() int64 { return c.Responses + c.Timeouts + c.NetworkErrors }

// Share429 returns the fraction of completed requests answered 429.
func (c Counts) Share429() float64 {
	if n := c.Completed(); n > 0 {
		return float64(c.HTTP429) / float64(n)
	}
	return 0
}

func (c *Counts) rates() {
	if c.Seconds > 0 {
		c.OKPerSecond = float64(c.OK) / c.Seconds
		c.CompletedPerSecond = float64(c.Completed()) / c.Seconds
	}
}

// ScopeSnapshot is the measurements of one throttling scope.
type ScopeSnapshot struct {
	// Scope is the throttling scope's name (by default host[:port]).
	Scope string `json:"scope"`
	Counts
	// BackoffSeconds is the time the scope spent backing off: from a
	// backoff trigger (a BACKOFF_HTTP_CODES status or a download error)
	// to the scope's next start, summed. Derived from the outside, so it
	// also counts a pause of the crawl itself.
	BackoffSeconds float64 `json:"backoff_seconds"`
	// Delay and BackoffLevel are the throttler's current view of the
	// scope, when ThrottleStates were given (0 otherwise).
	Delay        time.Duration `json:"delay_ns"`
	BackoffLevel int           `json:"backoff_level"`
	// BlockedFor is how much longer a hard delay announced by the server
	// (Retry-After, RateLimit-Reset) or set by DelayScope holds the scope
	// back, at the snapshot time.
	BlockedFor time.Duration `json:"blocked_ns,omitempty"`
}

// Snapshot is a consistent-enough copy of a Recorder's measurements (each
// scope is copied under its own lock; global counters are read one by one).
type Snapshot struct {
	// At is when the snapshot was taken.
	At time.Time `json:"at"`
	// Start and End of the crawl (End is zero while it runs).
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Global are the crawl-wide measurements.
	Global Counts `json:"global"`
	// AdmissionsPerSecond is Global.Requests / Global.Seconds: the mean
	// start rate (Global.MaxStarts1s is the peak).
	AdmissionsPerSecond float64 `json:"admissions_per_second"`
	// ErrorKinds counts download errors by downloader error kind.
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	// Scopes are sorted by requests, most first, then by name.
	Scopes []ScopeSnapshot `json:"scopes"`
}

// ThrottleStates is the throttler's view of its scopes (satisfied by
// *throttling.Throttler); it feeds ScopeSnapshot.Delay and BackoffLevel.
type ThrottleStates interface {
	Snapshot() []throttling.ScopeSnapshot
}

// scopeStates indexes a throttler snapshot by scope name.
type scopeStates map[string]throttling.ScopeSnapshot

func statesOf(ts ThrottleStates) scopeStates {
	if ts == nil {
		return nil
	}
	snaps := ts.Snapshot()
	m := make(scopeStates, len(snaps))
	for _, s := range snaps {
		m[s.Scope] = s
	}
	return m
}

// Snapshot returns the current measurements; ts (may be nil) adds each
// scope's current delay and backoff level.
func (r *Recorder) Snapshot(ts ThrottleStates) Snapshot {
	insp := statesOf(ts)
	now := r.clock.Now()
	s := Snapshot{At: now}
	if v := r.started.Load(); v != 0 {
		s.Start = time.Unix(0, v)
	}
	end := now
	if v := r.finished.Load(); v != 0 {
		s.End = time.Unix(0, v)
		end = s.End
	}
	g := &s.Global
	g.Requests, g.Retries = r.requests.Load(), r.retries.Load()
	g.Responses, g.OK, g.HTTP429, g.OtherErrors = r.responses.Load(), r.ok.Load(), r.r429.Load(), r.other.Load()
	g.Timeouts, g.NetworkErrors, g.Cancelled = r.timeouts.Load(), r.netErrs.Load(), r.cancelled.Load()
	g.InFlight, g.PeakInFlight = r.inflight.Load(), r.peak.Load()
	r.mu.Lock()
	g.MaxStarts1s, g.MaxStarts100ms, g.StartsFirst500ms = r.win.max1s, r.win.max100ms, r.win.first500
	if r.win.first != 0 {
		g.First = time.Unix(0, r.win.first)
	}
	g.Last = r.lastEnd
	g.Statuses = maps.Clone(r.statuses)
	s.ErrorKinds = maps.Clone(r.errKinds)
	r.mu.Unlock()
	if !s.Start.IsZero() && end.After(s.Start) {
		g.Seconds = end.Sub(s.Start).Seconds()
	}
	g.rates()
	if g.Seconds > 0 {
		s.AdmissionsPerSecond = float64(g.Requests) / g.Seconds
	}

	s.Scopes = make([]ScopeSnapshot, 0, r.nscopes.Load())
	r.eachScope(func(st *scopeState) {
		s.Scopes = append(s.Scopes, st.snapshot(now, insp))
	})
	slices.SortFunc(s.Scopes, func(a, b ScopeSnapshot) int {
		if a.Requests != b.Requests {
			return int(b.Requests - a.Requests)
		}
		return strings.Compare(a.Scope, b.Scope)
	})
	return s
}

func (s *scopeState) snapshot(now time.Time, insp scopeStates) ScopeSnapshot {
	s.mu.Lock()
	out := ScopeSnapshot{Scope: s.name, Counts: Counts{
		Requests: s.requests, Retries: s.retries, Responses: s.responses, OK: s.ok, HTTP429: s.r429,
		OtherErrors: s.other, Timeouts: s.timeouts, NetworkErrors: s.netErrs, Cancelled: s.cancelled,
		InFlight: int64(s.inflight), PeakInFlight: int64(s.peak),
		MaxStarts1s: s.win.max1s, MaxStarts100ms: s.win.max100ms, StartsFirst500ms: s.win.first500,
		First: s.first, Last: s.lastEnd, Statuses: maps.Clone(s.statuses),
	}, BackoffSeconds: s.backoff.Seconds()}
	st, known := insp[s.name]
	if known {
		out.Delay, out.BackoffLevel = time.Duration(st.Delay*float64(time.Second)), st.BackoffLevel
		if st.BlockedUntil.After(now) {
			out.BlockedFor = st.BlockedUntil.Sub(now)
		}
	}
	if s.inflight == 0 && !s.backoffSince.IsZero() && known && (st.BackoffLevel > 0 || now.Before(st.BlockedUntil)) && now.After(s.backoffSince) {
		// Backing off right now: count the pause so far, since the
		// throttler confirms it (otherwise the scope may just be done).
		out.BackoffSeconds += now.Sub(s.backoffSince).Seconds()
	}
	s.mu.Unlock()
	end := out.Last
	if out.InFlight > 0 {
		end = now
	}
	if !out.First.IsZero() && end.After(out.First) {
		out.Seconds = end.Sub(out.First).Seconds()
	}
	out.rates()
	return out
}

// Top returns the first n scopes (the most requested), all when n <= 0.
func (s Snapshot) Top(n int) []ScopeSnapshot {
	if n <= 0 || n >= len(s.Scopes) {
		return s.Scopes
	}
	return s.Scopes[:n]
}

// Scope returns the snapshot of the named scope.
func (s Snapshot) Scope(name string) (ScopeSnapshot, bool) {
	for _, sc := range s.Scopes {
		if sc.Scope == name {
			return sc, true
		}
	}
	return ScopeSnapshot{}, false
}
