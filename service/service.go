// Package service is the crawl service behind `gocrawl serve`: a REST API
// and a web page to start, watch and cancel crawls, cron schedules, and a
// job history kept in SQLite.
//
// Every job runs as a child process of the program (`PROGRAM run SPIDER
// ...`) with its own JOBDIR under the service's directory, so that a crash
// of one crawl never takes the service down and a job can be resumed after
// a restart. At most MaxJobs run at once; the others wait in a queue.
//
// A Service is built by New from a Config, serves HTTP through Handler,
// and is stopped by Close:
//
//	svc, err := service.New(ctx, service.Config{Dir: "gocrawl-serve", Jobs: checker, Executable: exe})
//	...
//	srv := &http.Server{Handler: svc.Handler()}
//
// The cli package wires it as the serve command of every cli.Main program;
// docs/service.md describes the API for users.
package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
)

// Checker validates jobs the way `run` does, in the program that will run
// them (it knows the program's spiders and settings).
type Checker interface {
	// Spiders returns the names of the spiders a job may run, sorted.
	Spiders() []string
	// Check reports every problem of a job (an unknown spider, argument or
	// setting, a bad value) in one error naming them, and returns the
	// settings the job would run with that do not have their default
	// value, with their origin.
	Check(spider string, args map[string]string, overrides []string) ([]settings.Entry, error)
}

// Recovery says what a restarted service does with jobs that were running.
type Recovery string

// The recoveries of SERVE_RECOVER.
const (
	Resume Recovery = "resume" // queue them again on their JOBDIR
	Fail   Recovery = "fail"   // mark them failed
)

// Missed says what a restarted service does with schedule runs it missed.
type Missed string

// The policies of SERVE_MISSED_RUNS.
const (
	SkipMissed Missed = "skip" // forget them; the next run is the next cron time
	RunOnce    Missed = "once" // run each schedule that missed runs once, now
)

// Config configures a Service.
type Config struct {
	// Dir holds the database (jobs.db) and one folder per job (jobs/ID).
	Dir string
	// Jobs validates jobs and lists spiders. Required.
	Jobs Checker
	// Executable is the program run for each job as `Executable run ...`;
	// empty means os.Executable().
	Executable string
	// WorkDir is the working directory of the jobs (where their
	// gocrawl.yaml is read); empty means the service's.
	WorkDir string
	// Env is the environment of the jobs; nil means the service's own,
	// without GOCRAWL_SERVE_TOKEN.
	Env []string
	// Token, when not empty, is the bearer token every request must carry.
	Token string
	// MaxJobs is how many jobs run at once (0 = 2).
	MaxJobs int
	// Recover and Missed are SERVE_RECOVER and SERVE_MISSED_RUNS (empty =
	// Resume, SkipMissed).
	Recover Recovery
	Missed  Missed
	// MaxBody caps request bodies, in bytes (0 = 1 MiB).
	MaxBody int64
	// Clock drives the schedules (nil = the real clock).
	Clock clock.Clock
	// Log receives the service's events (nil = none).
	Log *zerolog.Logger
}

// Service runs jobs and schedules and serves the API and the page.
type Service struct {
	cfg   Config
	db    *store
	clk   clock.Clock
	log   zerolog.Logger
	met   *serviceMetrics
	token []byte

	mu      sync.Mutex
	running map[string]*proc
	closing bool
	wake    chan struct{} // a job was queued or ended: start what may start
	results sync.Map      // job ID -> *JobResult of a final job (figures.go)

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New opens (or creates) the service's directory and database, recovers
// the jobs a previous service left running (Config.Recover), and starts
// the queue and the schedules.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Jobs == nil {
		return nil, errors.New("service: Config.Jobs is required")
	}
	if cfg.Dir == "" {
		return nil, errors.New("service: Config.Dir is required (SERVE_DIR)")
	}
	if cfg.MaxJobs <= 0 {
		cfg.MaxJobs = 2
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	switch cfg.Recover {
	case "":
		cfg.Recover = Resume
	case Resume, Fail:
	default:
		return nil, fmt.Errorf("SERVE_RECOVER %q: want resume or fail", cfg.Recover)
	}
	switch cfg.Missed {
	case "":
		cfg.Missed = SkipMissed
	case SkipMissed, RunOnce:
	default:
		return nil, fmt.Errorf("SERVE_MISSED_RUNS %q: want skip or once", cfg.Missed)
	}
	if cfg.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("service: finding the program to run jobs with: %w", err)
		}
		cfg.Executable = exe
	}
	if cfg.Env == nil {
		for _, kv := range os.Environ() {
			if len(kv) >= len("GOCRAWL_SERVE_TOKEN=") && kv[:len("GOCRAWL_SERVE_TOKEN=")] == "GOCRAWL_SERVE_TOKEN=" {
				continue
			}
			cfg.Env = append(cfg.Env, kv)
		}
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if err := os.MkdirAll(filepath.Join(dir, "jobs"), 0o700); err != nil {
		return nil, fmt.Errorf("SERVE_DIR %s: %w", dir, err)
	}
	db, err := openStore(dir)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, db: db, clk: cfg.Clock, running: map[string]*proc{}, wake: make(chan struct{}, 1)}
	if s.clk == nil {
		s.clk = clock.Real
	}
	if cfg.Log != nil {
		s.log = *cfg.Log
	} else {
		s.log = zerolog.Nop()
	}
	if cfg.Token != "" {
		s.token = []byte(cfg.Token)
	}
	s.met = newServiceMetrics(s)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.recoverJobs(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.catchUpSchedules(ctx); err != nil {
		db.Close()
		return nil, err
	}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.dispatchLoop() }()
	go func() { defer s.wg.Done(); s.scheduleLoop() }()
	s.poke()
	return s, nil
}

// Close stops the schedules, stops the running jobs gracefully (SIGTERM;
// they stay "running" in the database, so that the next service resumes or
// fails them as SERVE_RECOVER says) and closes the database. Jobs still
// running when ctx ends are killed.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	procs := make([]*proc, 0, len(s.running))
	for _, p := range s.running {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	s.cancel()
	for _, p := range procs {
		p.shutdown()
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-ctx.Done():
			p.kill()
			<-p.done
		}
	}
	s.wg.Wait()
	return s.db.Close()
}

// poke wakes the dispatcher.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// IsLoopback reports whether addr (host:port) listens on loopback only:
// 127.0.0.0/8, ::1 or localhost.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// jobDir is the folder of job id.
func (s *Service) jobDir(id string) string { return filepath.Join(s.cfg.Dir, "jobs", id) }

// now is the service clock's time in UTC, to the millisecond (what the
// database keeps).
func (s *Service) now() time.Time { return s.clk.Now().UTC().Truncate(time.Millisecond) }
