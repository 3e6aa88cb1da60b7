package simsite

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// Record is what the server saw of one request, written when its handler
// returned.
type Record struct {
	Start      time.Time // handler entered (request headers read)
	End        time.Time // handler returned (answer sent or connection dropped)
	Host       string    // virtual host name (HostConfig.Name)
	Method     string
	Path       string // request URI: path and query
	Status     int    // status sent; 0 when no answer was sent (reset, client gone)
	Bytes      int64  // body bytes written
	RemoteAddr string
	// Client is the limiter key of the request: the remote IP, or "*"
	// with KeyGlobal.
	Client string
	// Limited is true when the limiter refused the request (429, 503 or a
	// soft-block page).
	Limited bool
	// RetryAfterUntil is, for a limited answer with Retry-After, the
	// instant before which the client was asked not to come back.
	RetryAfterUntil time.Time
	// Fault is the injected fault kind, "" when none.
	Fault FaultKind
}

// Records is a list of request records with the statistics that judge a
// crawler from the outside. Methods do not modify it.
type Records []Record

// recorder collects records concurrently, keeping at most max (0 = all).
type recorder struct {
	max     int
	mu      sync.Mutex
	recs    Records
	dropped int64
}

func (r *recorder) add(rec Record) {
	r.mu.Lock()
	if r.max > 0 && len(r.recs) >= r.max {
		// Forget the oldest half: amortised O(1) per record.
		keep := r.max / 2
		r.dropped += int64(len(r.recs) - keep)
		r.recs = append(r.recs[:0], r.recs[len(r.recs)-keep:]...)
	}
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) snapshot(reset bool) Records {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.recs)
	if reset {
		r.recs = nil
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Host returns the records of one virtual host.
func (rs Records) Host(name string) Records {
	var out Records
	for _, r := range rs {
		if r.Host == name {
			out = append(out, r)
		}
	}
	return out
}

// ByStatus counts records by status (0 = no answer).
func (rs Records) ByStatus() map[int]int {
	m := map[int]int{}
	for _, r := range rs {
		m[r.Status]++
	}
	return m
}

// Limited counts the records the limiter refused.
func (rs Records) Limited() int {
	n := 0
	for _, r := range rs {
		if r.Limited {
			n++
		}
	}
	return n
}

// PeakConcurrent is the largest number of requests in progress at once.
// A request ending at the instant another starts does not overlap it.
func (rs Records) PeakConcurrent() int {
	type event struct {
		t     time.Time
		delta int
	}
	ev := make([]event, 0, 2*len(rs))
	for _, r := range rs {
		ev = append(ev, event{r.Start, +1}, event{r.End, -1})
	}
	sort.Slice(ev, func(i, j int) bool {
		if c := ev[i].t.Compare(ev[j].t); c != 0 {
			return c < 0
		}
		return ev[i].delta < ev[j].delta // ends first
	})
	cur, peak := 0, 0
	for _, e := range ev {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak
}

func (rs Records) starts() []time.Time {
	ts := make([]time.Time, len(rs))
	for i, r := range rs {
		ts[i] = r.Start
	}
	slices.SortFunc(ts, time.Time.Compare)
	return ts
}

// MaxStartsIn is the most requests started within any window of length w
// (starts s with t <= s < t+w, for the worst t).
func (rs Records) MaxStartsIn(w time.Duration) int {
	ts := rs.starts()
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// StartsWithin counts the requests started less than d after the first one.
func (rs Records) StartsWithin(d time.Duration) int {
	ts := rs.starts()
	n := 0
	for _, t := range ts {
		if t.Sub(ts[0]) < d {
			n++
		}
	}
	return n
}

// DefaultRetryAfterGrace is the grace Stats gives a client to learn of a
// Retry-After: a request that was already on its way when the limited
// answer left the server is not the client's fault.
const DefaultRetryAfterGrace = 50 * time.Millisecond

// RetryAfterViolations counts requests that arrived inside a Retry-After
// window previously announced to the same client key of the same host: a
// request starting after an announcement's End+grace and before its
// RetryAfterUntil.
func (rs Records) RetryAfterViolations(grace time.Duration) int {
	type key struct{ host, client string }
	type window struct{ from, until time.Time }
	windows := map[key][]window{}
	for _, r := range rs {
		if !r.RetryAfterUntil.IsZero() {
			k := key{r.Host, r.Client}
			windows[k] = append(windows[k], window{r.End.Add(grace), r.RetryAfterUntil})
		}
	}
	n := 0
	for _, r := range rs {
		for _, w := range windows[key{r.Host, r.Client}] {
			if r.Start.After(w.from) && r.Start.Before(w.until) {
				n++
				break
			}
		}
	}
	return n
}

// HostStats summarises the records of one host.
type HostStats struct {
	Requests             int
	ByStatus             map[int]int // status -> count; 0 = no answer
	Limited              int         // refused by the limiter (any answer)
	Faults               int         // requests that got an injected fault
	PeakConcurrent       int
	MaxStarts1s          int // most starts in any 1 s window
	MaxStarts100ms       int // most starts in any 100 ms window
	StartsFirst500ms     int // starts in the 500 ms after the first request
	RetryAfterViolations int // with DefaultRetryAfterGrace
	First, Last          time.Time
}

// Stats summarises the records (usually of one host: see Host).
func (rs Records) Stats() HostStats {
	s := HostStats{Requests: len(rs), ByStatus: rs.ByStatus(), Limited: rs.Limited()}
	if len(rs) == 0 {
		return s
	}
	for _, r := range rs {
		if r.Fault != "" {
			s.Faults++
		}
		if s.First.IsZero() || r.Start.Before(s.First) {
			s.First = r.Start
		}
		if r.End.After(s.Last) {
			s.Last = r.End
		}
	}
	s.PeakConcurrent = rs.PeakConcurrent()
	s.MaxStarts1s = rs.MaxStartsIn(time.Second)
	s.MaxStarts100ms = rs.MaxStartsIn(100 * time.Millisecond)
	s.StartsFirst500ms = rs.StartsWithin(500 * time.Millisecond)
	s.RetryAfterViolations = rs.RetryAfterViolations(DefaultRetryAfterGrace)
	return s
}
