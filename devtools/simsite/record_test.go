package simsite

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// rec builds a record starting and ending at offsets (ms) from t0.
func rec(host string, startMS, endMS int, status int) Record {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return Record{Host: host, Client: "127.0.0.1", Status: status,
		Start: t0.Add(time.Duration(startMS) * time.Millisecond), End: t0.Add(time.Duration(endMS) * time.Millisecond)}
}

func withRetryAfter(r Record, untilMS int) Record {
	r.Limited = true
	r.RetryAfterUntil = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(untilMS) * time.Millisecond)
	return r
}

func TestRecordsStatistics(t *testing.T) {
	tests := []struct {
		name       string
		recs       Records
		peak       int
		max1s      int
		max100ms   int
		first500   int
		violations int
	}{
		{name: "empty"},
		{
			name: "sequential, no overlap when one ends as the next starts",
			recs: Records{rec("a", 0, 100, 200), rec("a", 100, 200, 200), rec("a", 200, 300, 200)},
			peak: 1, max1s: 3, max100ms: 1, first500: 3,
		},
		{
			name: "a burst at t=0 then a trickle",
			recs: Records{
				rec("a", 0, 50, 200), rec("a", 1, 60, 200), rec("a", 2, 70, 200), rec("a", 3, 80, 200),
				rec("a", 600, 650, 200), rec("a", 1200, 1250, 200), rec("a", 1800, 1850, 200),
			},
			peak: 4, max1s: 5, max100ms: 4, first500: 4,
		},
		{
			name: "window edges: [t, t+w) holds starts at t and t+w-1ns",
			recs: Records{rec("a", 0, 1, 200), rec("a", 99, 100, 200), rec("a", 100, 101, 200)},
			peak: 1, max1s: 3, max100ms: 2, first500: 3,
		},
		{
			name: "Retry-After honoured",
			recs: Records{
				withRetryAfter(rec("a", 0, 10, 429), 1010),
				rec("a", 5, 900, 200),     // in flight before the announcement
				rec("a", 30, 40, 429),     // inside the grace after the announcement
				rec("a", 1010, 1020, 200), // at the end of the window: allowed
			},
			peak: 2, max1s: 3, max100ms: 3, first500: 3,
		},
		{
			name: "Retry-After ignored",
			recs: Records{
				withRetryAfter(rec("a", 0, 10, 429), 2000),
				rec("a", 100, 110, 429), rec("a", 500, 510, 429), rec("a", 1999, 2005, 200),
				rec("a", 2500, 2510, 200),
			},
			peak: 1, max1s: 3, max100ms: 1, first500: 2, violations: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := tt.recs
			got := []int{rs.PeakConcurrent(), rs.MaxStartsIn(time.Second), rs.MaxStartsIn(100 * time.Millisecond),
				rs.StartsWithin(500 * time.Millisecond), rs.RetryAfterViolations(DefaultRetryAfterGrace)}
			want := []int{tt.peak, tt.max1s, tt.max100ms, tt.first500, tt.violations}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("peak, max1s, max100ms, first500ms, violations = %v, want %v", got, want)
			}
			st := rs.Stats()
			if st.Requests != len(rs) || st.PeakConcurrent != tt.peak || st.RetryAfterViolations != tt.violations {
				t.Errorf("Stats() = %+v", st)
			}
		})
	}
}

func TestRetryAfterViolationsArePerHostAndClient(t *testing.T) {
	announce := withRetryAfter(rec("a", 0, 10, 429), 5000)
	otherClient := rec("a", 500, 510, 200)
	otherClient.Client = "127.0.0.2"
	rs := Records{announce, otherClient, rec("b", 500, 510, 200), rec("a", 600, 610, 200)}
	if got := rs.RetryAfterViolations(0); got != 1 {
		t.Errorf("violations = %d, want 1 (only host a, client 127.0.0.1)", got)
	}
	if got := rs.Host("b").Stats().RetryAfterViolations; got != 0 {
		t.Errorf("host b violations = %d, want 0", got)
	}
}

func TestServerRecordsEveryRequest(t *testing.T) {
	clk := newFakeClock()
	s := startT(t, Config{Now: clk.Now, Hosts: []HostConfig{
		{Name: "strict", Limit: LimitConfig{Rate: 1, Burst: 2}},
		{Name: "lenient"},
	}})
	for i := range 4 {
		get(t, s.URL("strict")+PagePath(i))
		get(t, s.URL("lenient")+PagePath(i))
	}
	resp, _ := get(t, s.URL("strict")+"/page/9?x=1")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", resp.StatusCode)
	}
	clk.Advance(500 * time.Millisecond) // still inside the 1 s Retry-After
	get(t, s.URL("strict")+"/page/10")

	recs := s.Records()
	if len(recs) != 10 {
		t.Fatalf("%d records, want 10", len(recs))
	}
	last := recs.Host("strict")[4]
	if last.Path != "/page/9?x=1" || last.Status != 429 || !last.Limited || last.Method != "GET" ||
		last.Client != "127.0.0.1" || last.Bytes == 0 || last.RemoteAddr == "" || last.RetryAfterUntil.IsZero() {
		t.Errorf("record = %+v", last)
	}
	st := s.Stats()
	if got := st["strict"].ByStatus; got[200] != 2 || got[429] != 4 {
		t.Errorf("strict by status = %v, want 2 ok and 4 limited", got)
	}
	if got := st["lenient"].ByStatus; got[200] != 4 || len(got) != 1 {
		t.Errorf("lenient by status = %v, want 4 ok", got)
	}
	// With the fake clock every request starts at one of two instants, and
	// the limited ones announced a window that later requests entered.
	if st["strict"].RetryAfterViolations == 0 {
		t.Errorf("strict: no Retry-After violation counted: %+v", st["strict"])
	}
	if st["lenient"].Limited != 0 || st["lenient"].RetryAfterViolations != 0 {
		t.Errorf("lenient stats = %+v", st["lenient"])
	}
	if got := s.ResetRecords(); len(got) != 10 || len(s.Records()) != 0 {
		t.Errorf("ResetRecords returned %d, left %d", len(got), len(s.Records()))
	}
}

func TestPeakConcurrentOnRealServer(t *testing.T) {
	s := startT(t, Config{Hosts: []HostConfig{{Name: "h", Latency: LatencyConfig{Kind: LatencyFixed, Fixed: 500 * time.Millisecond}}}})
	done := make(chan error)
	for i := range 5 {
		go func() {
			_, _, err := fetch(s.URL("h")+PagePath(i), 10*time.Second)
			done <- err
		}()
	}
	for range 5 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Five requests each held 500 ms by the server: they overlap unless
	// the machine stalled for most of that time. Ratios, not times.
	if p := s.Records().PeakConcurrent(); p < 2 || p > 5 {
		t.Errorf("peak concurrent = %d, want 2..5", p)
	}
}

func TestMaxRecordsKeepsTheNewest(t *testing.T) {
	s := startT(t, Config{MaxRecords: 4, Hosts: []HostConfig{{Name: "h"}}})
	for i := range 7 {
		get(t, s.URL("h")+PagePath(i))
	}
	recs := s.Records()
	// The 5th record halves 4 to 2 (+1), the 7th halves 4 to 2 again (+1):
	// pages 4, 5, 6 are kept and 4 records dropped.
	if len(recs) != 3 || recs[0].Path != "/page/4" || recs[2].Path != "/page/6" || s.DroppedRecords() != 4 {
		t.Errorf("kept %d records ending %q, dropped %d", len(recs), recs[len(recs)-1].Path, s.DroppedRecords())
	}
}
