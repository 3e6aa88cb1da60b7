package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads the standard five fields (minute hour day-of-month
// month day-of-week) and the descriptors @hourly, @daily, @weekly,
// @monthly, @yearly and @every DURATION.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseCron parses expr, or returns a *BadRequest saying what is wrong.
func parseCron(expr string) (cron.Schedule, error) {
	if expr == "" {
		return nil, badRequest("a schedule needs a cron expression, e.g. \"0 3 * * *\" (03:00 every day) or \"@every 6h\"")
	}
	sched, err := cronParser.Parse(expr)
	if err == nil {
		if d, ok := strings.CutPrefix(expr, "@every "); ok {
			// The parser takes any duration and rounds it up to a second.
			if every, perr := time.ParseDuration(strings.TrimSpace(d)); perr == nil && every < time.Second {
				err = fmt.Errorf("@every needs a duration of at least 1s, got %s", d)
			}
		}
	}
	if err != nil {
		return nil, badRequest("cron expression %q: %v (want minute hour day-of-month month day-of-week, e.g. \"0 3 * * *\", or @hourly, @daily, @every 6h)", expr, err)
	}
	return sched, nil
}

// AddSchedule checks a schedule (its cron expression, and its job the way
// Submit does) and stores it; its first run is the next time the
// expression names.
func (s *Service) AddSchedule(ctx context.Context, sc Schedule) (*Schedule, error) {
	sched, err := parseCron(sc.Cron)
	if err != nil {
		return nil, err
	}
	if _, err := s.check(sc.Spider, sc.Args, sc.Settings); err != nil {
		return nil, err
	}
	sc.ID = newID()
	sc.Args, sc.Settings = nonNil(sc.Args), nonNil(sc.Settings)
	sc.Created = s.now()
	sc.LastRun = nil
	sc.NextRun = sched.Next(sc.Created).UTC()
	if err := s.db.insertSchedule(ctx, &sc); err != nil {
		return nil, err
	}
	s.log.Info().Str("schedule", sc.ID).Str("cron", sc.Cron).Time("next_run", sc.NextRun).Msg("schedule added")
	return &sc, nil
}

// scheduleLoop checks the schedules every second of the service's clock.
func (s *Service) scheduleLoop() {
	t := s.clk.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C():
		}
		s.runDue(s.ctx)
		t.Reset(time.Second)
	}
}

// runDue starts a job for every schedule whose next run has come, unless
// the schedule's previous job is still queued or running and the schedule
// does not allow overlap (that run is skipped), and moves each to its next
// time after now.
func (s *Service) runDue(ctx context.Context) {
	scs, err := s.db.schedules(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error().Err(err).Msg("reading the schedules")
		}
		return
	}
	now := s.now()
	for _, sc := range scs {
		if sc.NextRun.After(now) {
			continue
		}
		s.fire(ctx, sc, now)
	}
}

// fire runs schedule sc now (or skips the run) and sets its next run.
func (s *Service) fire(ctx context.Context, sc *Schedule, now time.Time) {
	sched, err := cronParser.Parse(sc.Cron)
	if err != nil { // stored schedules were parsed when added
		s.log.Error().Err(err).Str("schedule", sc.ID).Msg("bad stored cron expression")
		return
	}
	busy := false
	if !sc.Overlap {
		if busy, err = s.db.liveJobsOf(ctx, sc.ID); err != nil {
			return
		}
	}
	if busy {
		s.met.skippedRuns.Inc()
		s.log.Info().Str("schedule", sc.ID).Msg("run skipped: the schedule's previous job is still queued or running")
	} else if _, err := s.Submit(ctx, sc.Spider, sc.Args, sc.Settings, sc.ID); err != nil {
		s.log.Error().Err(err).Str("schedule", sc.ID).Msg("the schedule's job was refused")
	}
	sc.LastRun = &now
	sc.NextRun = sched.Next(now).UTC()
	if err := s.db.updateScheduleRuns(ctx, sc); err != nil {
		s.log.Error().Err(err).Str("schedule", sc.ID).Msg("recording the schedule's run")
	}
}

// catchUpSchedules handles the runs missed while the service was down:
// with SERVE_MISSED_RUNS=once a schedule that missed runs runs once now;
// with skip its next run is simply the next time after now.
func (s *Service) catchUpSchedules(ctx context.Context) error {
	scs, err := s.db.schedules(ctx)
	if err != nil {
		return err
	}
	now := s.now()
	for _, sc := range scs {
		if sc.NextRun.After(now) {
			continue
		}
		if s.cfg.Missed == RunOnce {
			s.log.Info().Str("schedule", sc.ID).Time("missed", sc.NextRun).Msg("running a missed schedule run once (SERVE_MISSED_RUNS=once)")
			s.fire(ctx, sc, now)
			continue
		}
		sched, err := cronParser.Parse(sc.Cron)
		if err != nil {
			continue
		}
		s.log.Info().Str("schedule", sc.ID).Time("missed", sc.NextRun).Msg("skipping missed schedule runs (SERVE_MISSED_RUNS=skip)")
		sc.NextRun = sched.Next(now).UTC()
		if err := s.db.updateScheduleRuns(ctx, sc); err != nil {
			return err
		}
	}
	return nil
}
