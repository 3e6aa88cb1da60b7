package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
)

// fakeChecker knows one spider and accepts any settings.
type fakeChecker struct{}

func (fakeChecker) Spiders() []string { return []string{"site"} }

func (fakeChecker) Check(spider string, _ map[string]string, _ []string) ([]settings.Entry, error) {
	if spider != "site" {
		return nil, errors.New("unknown spider " + spider)
	}
	return nil, nil
}

func newTestService(t *testing.T, dir string, clk clock.Clock, missed Missed) *Service {
	t.Helper()
	// Jobs run /bin/true: they finish at once, whatever their arguments.
	s, err := New(context.Background(), Config{Dir: dir, Jobs: fakeChecker{}, Executable: "/bin/true", Clock: clk, Missed: missed})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scheduleJobs(t *testing.T, s *Service, id string) int {
	t.Helper()
	jobs, err := s.db.jobs(context.Background(), JobFilter{Schedule: id})
	if err != nil {
		t.Fatal(err)
	}
	return len(jobs)
}

// TestMissedRuns restarts a service three days after a daily schedule's
// last run: skip forgets the missed runs, once runs the schedule once at
// start-up; either way the next run is the next 03:00.
func TestMissedRuns(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		missed Missed
		jobs   int
	}{{SkipMissed, 0}, {RunOnce, 1}} {
		t.Run(string(tt.missed), func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewFake(t0)
			s := newTestService(t, dir, clk, tt.missed)
			sc, err := s.AddSchedule(context.Background(), Schedule{Spider: "site", Cron: "0 3 * * *"})
			if err != nil {
				t.Fatal(err)
			}
			if want := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC); !sc.NextRun.Equal(want) {
				t.Errorf("first run %v, want %v", sc.NextRun, want)
			}
			s.Close(context.Background())

			clk = clock.NewFake(t0.Add(72 * time.Hour))
			s = newTestService(t, dir, clk, tt.missed)
			defer s.Close(context.Background())
			if n := scheduleJobs(t, s, sc.ID); n != tt.jobs {
				t.Errorf("%d jobs after the restart, want %d", n, tt.jobs)
			}
			scs, _ := s.db.schedules(context.Background())
			if want := time.Date(2026, 3, 5, 3, 0, 0, 0, time.UTC); !scs[0].NextRun.Equal(want) {
				t.Errorf("next run %v, want %v", scs[0].NextRun, want)
			}
		})
	}
}

// TestScheduleFires moves the clock past a schedule's time: the schedule
// loop starts one job and sets the next run.
func TestScheduleFires(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	s := newTestService(t, t.TempDir(), clk, SkipMissed)
	defer s.Close(context.Background())
	sc, err := s.AddSchedule(context.Background(), Schedule{Spider: "site", Cron: "@hourly"})
	if err != nil {
		t.Fatal(err)
	}
	if n := scheduleJobs(t, s, sc.ID); n != 0 {
		t.Fatalf("%d jobs before the schedule's time", n)
	}
	deadline := time.Now().Add(time.Minute)
	for clk.Pending() == 0 { // the schedule loop's timer
		if time.Now().After(deadline) {
			t.Fatal("the schedule loop did not start")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Advance(time.Hour)
	var sc1 *Schedule
	for { // the run is recorded after its job is queued
		scs, err := s.db.schedules(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if sc1 = scs[0]; sc1.LastRun != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the schedule did not run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := scheduleJobs(t, s, sc.ID); n != 1 {
		t.Errorf("%d jobs after one run, want 1", n)
	}
	if want := t0.Add(2 * time.Hour); !sc1.NextRun.Equal(want) || !sc1.LastRun.Equal(t0.Add(time.Hour)) {
		t.Errorf("after the run: next %v (want %v), last %v", sc1.NextRun, want, sc1.LastRun)
	}
}

func TestParseCron(t *testing.T) {
	for _, tt := range []struct {
		expr string
		ok   bool
	}{
		{"0 3 * * *", true}, {"*/15 * * * 1-5", true}, {"@daily", true}, {"@every 6h", true},
		{"", false}, {"61 * * * *", false}, {"* * *", false}, {"0 3 * * * *", false}, {"@sometimes", false}, {"@every -1h", false},
	} {
		_, err := parseCron(tt.expr)
		if (err == nil) != tt.ok {
			t.Errorf("parseCron(%q): %v, want ok=%v", tt.expr, err, tt.ok)
		}
		var bad *BadRequest
		if err != nil && (!errors.As(err, &bad) || tt.expr != "" && !strings.Contains(err.Error(), tt.expr)) {
			t.Errorf("parseCron(%q): %v does not name the expression", tt.expr, err)
		}
	}
}

func TestTailFile(t *testing.T) {
	path := t.TempDir() + "/log"
	if err := writeFile(path, "a\nb\nc\nd\n"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "a\nb\nc\nd\n"}, {1, "d\n"}, {3, "b\nc\nd\n"}, {9, "a\nb\nc\nd\n"}} {
		got, err := tailFile(path, tt.n)
		if err != nil || string(got) != tt.want {
			t.Errorf("tail %d: %q %v, want %q", tt.n, got, err, tt.want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6800": true, "127.0.0.2:0": true, "localhost:1": true, "[::1]:6800": true,
		"0.0.0.0:6800": false, ":6800": false, "10.0.0.5:80": false, "[::]:6800": false, "example.com:80": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
}
