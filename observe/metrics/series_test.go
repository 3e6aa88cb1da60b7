package metrics

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/spider"
)

// seriesCrawl drives a Recorder by hand: requests to a scope that end
// with a status after some time.
type seriesCrawl struct {
	t   *testing.T
	clk *clock.Fake
	rec *Recorder
	n   int
}

func (c *seriesCrawl) start(scope string) *spider.Request {
	c.n++
	r := req(c.t, fmt.Sprintf("http://%s/%d", scope, c.n))
	c.rec.RequestStarted(c.clk.Now(), r, scopesOf(scope))
	return r
}

func (c *seriesCrawl) finish(r *spider.Request, status int) {
	c.rec.RequestFinished(c.clk.Now(), r, scopesOf(r.URL.Host), &spider.Response{Status: status, Request: r}, nil)
}

// done sends n requests to scope, each answered status at once.
func (c *seriesCrawl) done(scope string, n, status int) {
	for range n {
		c.finish(c.start(scope), status)
	}
}

func TestSeriesRates(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := NewRecorder(RecorderOptions{Clock: clk, BackoffCodes: []int{429, 503}})
	states := map[string]ScopeState{"a.example": {Delay: 0.5, ConfiguredDelay: 0.5, Concurrency: 4, ConfiguredConcurrency: 4}}
	sr := NewSeriesRecorder(rec, SeriesOptions{Interval: time.Second, Scopes: 5,
		State: func(s string) (ScopeState, bool) { st, ok := states[s]; return st, ok }})
	sr.Begin(t0)
	c := &seriesCrawl{t: t, clk: clk, rec: rec}

	// Second 1: a gets 10 ok and 2 429s, with 3 in flight at most.
	r1, r2, r3 := c.start("a.example"), c.start("a.example"), c.start("a.example")
	c.finish(r1, 200)
	c.finish(r2, 200)
	c.finish(r3, 429)
	c.done("a.example", 8, 200)
	c.done("a.example", 1, 429)
	clk.Advance(time.Second)
	sr.Sample(clk.Now())
	// Second 2: a backs off (the throttler says so); b appears with 4 ok.
	states["a.example"] = ScopeState{Delay: 2, BackoffLevel: 1, Concurrency: 1, ConfiguredDelay: 0.5, ConfiguredConcurrency: 4}
	c.done("a.example", 1, 503)
	c.done("b.example", 4, 200)
	clk.Advance(time.Second)
	sr.Sample(clk.Now())
	// Half a second more, then the crawl ends.
	c.done("a.example", 3, 200)
	clk.Advance(500 * time.Millisecond)
	sr.Flush(clk.Now())

	s := sr.Series()
	if !s.Start.Equal(t0) || s.Step != 1 {
		t.Errorf("start %v step %v", s.Start, s.Step)
	}
	wantGlobal := SeriesPoints{T: []float64{1, 2, 2.5}, OK: []float64{10, 4, 6}, Refused: []float64{2, 1, 0},
		Errors: []float64{0, 0, 0}, InFlight: []float64{3, 1, 1}}
	if !reflect.DeepEqual(s.Global, wantGlobal) {
		t.Errorf("global:\n got %+v\nwant %+v", s.Global, wantGlobal)
	}
	if len(s.Scopes) != 2 || s.Scopes[0].Scope != "a.example" || s.Scopes[1].Scope != "b.example" {
		t.Fatalf("scopes %+v", s.Scopes)
	}
	a := s.Scopes[0]
	if !reflect.DeepEqual(a.OK, []float64{10, 0, 6}) || !reflect.DeepEqual(a.Refused, []float64{2, 1, 0}) ||
		!reflect.DeepEqual(a.Delay, []float64{0.5, 2, 2}) || !reflect.DeepEqual(a.Level, []float64{0, 1, 1}) ||
		!reflect.DeepEqual(a.Concurrency, []float64{4, 1, 1}) || a.ConfiguredDelay != 0.5 || a.ConfiguredConcurrency != 4 {
		t.Errorf("a.example: %+v", a)
	}
	// b got its series at the second sample and counts from zero: its
	// requests started after the first point.
	b := s.Scopes[1]
	if !reflect.DeepEqual(b.T, []float64{2, 2.5}) || !reflect.DeepEqual(b.OK, []float64{4, 0}) {
		t.Errorf("b.example: %+v", b)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("series do not encode as JSON: %v", err)
	}
}

// A long crawl keeps at most Points points per series: neighbouring points
// merge (rates averaged, in-flight peaks kept) and the step doubles.
func TestSeriesBoundedPoints(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := NewRecorder(RecorderOptions{Clock: clk})
	sr := NewSeriesRecorder(rec, SeriesOptions{Interval: time.Second, Points: 16})
	sr.Begin(t0)
	c := &seriesCrawl{t: t, clk: clk, rec: rec}
	for i := range 100 {
		c.done("h.example", (i+1)%2*2, 200) // 2 ok, 0 ok, 2 ok, ...
		clk.Advance(time.Second)
		sr.Sample(clk.Now())
	}
	s := sr.Series()
	if n := len(s.Global.T); n >= 16 || n < 8 {
		t.Errorf("%d points after 100 samples, want between 8 and 15", n)
	}
	if s.Step != 8 {
		t.Errorf("step = %v s, want 8 (halved three times)", s.Step)
	}
	for i, v := range s.Global.OK {
		if v != 1 {
			t.Errorf("point %d (t=%v): %v ok/s, want the mean 1", i, s.Global.T[i], v)
		}
	}
	if last := s.Global.T[len(s.Global.T)-1]; last != 96 {
		t.Errorf("last point at %v s, want 96 (the 4 samples after it are pending)", last)
	}
	if sc := s.Scopes[0]; len(sc.T) != len(s.Global.T) || sc.T[0] != s.Global.T[0] {
		t.Errorf("scope series not halved with the global one: %v vs %v", sc.T, s.Global.T)
	}
}

// Only the busiest scopes get a series; a scope gives its place only to
// one with at least twice its requests.
func TestSeriesBusiestScopes(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := NewRecorder(RecorderOptions{Clock: clk})
	sr := NewSeriesRecorder(rec, SeriesOptions{Interval: time.Second, Scopes: 2})
	sr.Begin(t0)
	c := &seriesCrawl{t: t, clk: clk, rec: rec}
	c.done("a", 30, 200)
	c.done("b", 20, 200)
	c.done("c", 25, 200) // busier than b, not twice: b keeps its place
	clk.Advance(time.Second)
	sr.Sample(clk.Now())
	names := func() []string {
		var out []string
		for _, sc := range sr.Series().Scopes {
			out = append(out, sc.Scope)
		}
		return out
	}
	if got := names(); !reflect.DeepEqual(got, []string{"a", "c"}) {
		// The first sample takes the busiest two.
		t.Fatalf("scopes %v, want [a c]", got)
	}
	c.done("b", 20, 200) // b: 40, not twice c's 25
	clk.Advance(time.Second)
	sr.Sample(clk.Now())
	if got := names(); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("scopes %v, want [a c] (b is not twice as busy as c)", got)
	}
	c.done("d", 100, 200)
	clk.Advance(time.Second)
	sr.Sample(clk.Now())
	if got := names(); !reflect.DeepEqual(got, []string{"d", "a"}) {
		t.Errorf("scopes %v, want [d a]", got)
	}
	if n := sr.Series().ScopesNotKept; n != 2 {
		t.Errorf("ScopesNotKept = %d, want 2 (b and c)", n)
	}
}
