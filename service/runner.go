package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Files of a job's folder (jobs/ID).
const (
	jobdirName  = "jobdir"      // the JOBDIR of the crawl
	logName     = "log.jsonl"   // the crawl's log, JSON lines
	outputName  = "output.txt"  // the crawl's standard output and error
	itemsName   = "items.jsonl" // the items, JSON lines (-o)
	statsName   = "stats.json"  // the STATS_DUMP_FILE
	monitorName = "monitors.json"
)

// exitMonitorFailed is the exit status of a crawl whose monitors failed.
const exitMonitorFailed = 3

// reserved are the settings the service sets for every job.
var reserved = []string{"JOBDIR", "METRICS_ADDR", "STATS_DUMP_FILE", "LOG_FILE", "LOG_FORMAT", "PROGRESS_DISPLAY", "MONITOR_RESULTS_FILE"}

// proc is a running job's process.
type proc struct {
	job  *Job
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has ended and its state is written

	mu        sync.Mutex
	cancels   int    // cancel requests so far
	stopping  bool   // the service is shutting down
	reportURL string // the live report of the crawl (its METRICS_ADDR)
	progress  map[string]any
	lastError string // the last error logged
}

func (p *proc) signal(sig os.Signal) {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(sig)
	}
}

// shutdown stops the process gracefully because the service stops.
func (p *proc) shutdown() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	p.signal(syscall.SIGTERM)
}

func (p *proc) kill() { p.signal(syscall.SIGKILL) }

// snapshot returns what the crawl's log told so far.
func (p *proc) snapshot() (reportURL string, progress map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reportURL, p.progress
}

// MonitorFailure is one failed check of a job's monitors.
type MonitorFailure struct {
	Monitor string `json:"monitor"`
	Reason  string `json:"reason"`
}

// monitorResults is the shape of the monitors.json a crawl writes after
// each run of its monitors.
type monitorResults struct {
	OK        bool             `json:"ok"`
	Final     bool             `json:"final"`
	CheckedAt string           `json:"checked_at"`
	Failures  []MonitorFailure `json:"failures"`
	Checks    []struct {
		Monitor string `json:"monitor"`
		OK      bool   `json:"ok"`
		Detail  string `json:"detail"`
	} `json:"checks"`
}

func readMonitors(path string) (*monitorResults, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r monitorResults
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Submit queues a job of spider after checking it as `run` would. The
// error of a bad job is a *BadRequest naming the problem.
func (s *Service) Submit(ctx context.Context, spider string, args, sets map[string]string, schedule string) (*Job, error) {
	if _, err := s.check(spider, args, sets); err != nil {
		return nil, err
	}
	j := &Job{ID: newID(), Spider: spider, Args: nonNil(args), Settings: nonNil(sets), State: Queued, Schedule: schedule, Created: s.now()}
	if err := s.db.insertJob(ctx, j); err != nil {
		return nil, err
	}
	s.log.Info().Str("job", j.ID).Str("spider", spider).Str("schedule", schedule).Msg("job queued")
	s.poke()
	return j, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// BadRequest is a problem of a request's content: it is answered with 400
// and its message.
type BadRequest struct{ Msg string }

func (e *BadRequest) Error() string { return e.Msg }

func badRequest(format string, a ...any) error { return &BadRequest{Msg: fmt.Sprintf(format, a...)} }

// overrides turns a job's settings into `-s NAME=VALUE` pairs, sorted.
func overrides(sets map[string]string) []string {
	out := make([]string, 0, len(sets))
	for k, v := range sets {
		out = append(out, k+"="+v)
	}
	sortStrings(out)
	return out
}

// check validates a job: settings the service owns are refused, the rest
// goes to the Checker.
func (s *Service) check(spider string, args, sets map[string]string) (any, error) {
	if spider == "" {
		return nil, badRequest("a job needs a spider (known spiders: %s)", strings.Join(s.cfg.Jobs.Spiders(), ", "))
	}
	for _, r := range reserved {
		if _, ok := sets[r]; ok {
			return nil, badRequest("setting %s is set by the service for each job; remove it", r)
		}
	}
	entries, err := s.cfg.Jobs.Check(spider, args, overrides(sets))
	if err != nil {
		return nil, &BadRequest{Msg: err.Error()}
	}
	return entries, nil
}

// dispatchLoop starts queued jobs while fewer than MaxJobs run.
func (s *Service) dispatchLoop() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		}
		for s.startNext() {
		}
	}
}

// startNext starts the oldest queued job if a slot is free, and reports
// whether it did (or tried: a job that cannot start is marked failed).
func (s *Service) startNext() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || len(s.running) >= s.cfg.MaxJobs {
		return false
	}
	j, err := s.db.oldestQueued(s.ctx)
	if err != nil || j == nil {
		if err != nil && s.ctx.Err() == nil {
			s.log.Error().Err(err).Msg("reading the queue")
		}
		return false
	}
	if err := s.start(j); err != nil {
		s.log.Error().Err(err).Str("job", j.ID).Msg("the job could not start")
		s.finish(j, Failed, "the job could not start: "+err.Error(), nil)
	}
	return true
}

// start runs job j's process; s.mu is held.
func (s *Service) start(j *Job) error {
	dir := s.jobDir(j.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(dir, outputName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	args := []string{"run", j.Spider}
	for _, k := range sortedKeys(j.Args) {
		args = append(args, "-a", k+"="+j.Args[k])
	}
	// Progress lines every 5 s unless the job says otherwise (its -s come
	// later and win); then what the service owns.
	args = append(args, "-s", "LOGSTATS_INTERVAL=5")
	for _, o := range overrides(j.Settings) {
		args = append(args, "-s", o)
	}
	jobdir := filepath.Join(dir, jobdirName)
	args = append(args,
		"-s", "JOBDIR="+jobdir,
		"-s", "METRICS_ADDR=127.0.0.1:0",
		"-s", "STATS_DUMP_FILE="+filepath.Join(dir, statsName),
		"-s", "LOG_FILE="+filepath.Join(dir, logName),
		"-s", "LOG_FORMAT=json",
		"-s", "PROGRESS_DISPLAY=off",
		"-o", filepath.Join(dir, itemsName))
	cmd := exec.Command(s.cfg.Executable, args...)
	cmd.Dir = s.cfg.WorkDir
	cmd.Env = s.cfg.Env
	cmd.SysProcAttr = childAttr()
	// The crawl logs to its LOG_FILE; what it writes before its log is
	// open (or a panic) goes to a file too, not to a pipe the service
	// would have to keep draining (a crawl must outlive a dead service).
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Start()
	out.Close()
	if err != nil {
		return err
	}
	now := s.now()
	j.State, j.Started, j.Ended, j.PID, j.ExitCode = Running, &now, nil, cmd.Process.Pid, nil
	if err := s.db.updateJob(s.ctx, j); err != nil {
		s.log.Error().Err(err).Str("job", j.ID).Msg("recording the job's start")
	}
	p := &proc{job: j, cmd: cmd, done: make(chan struct{})}
	s.running[j.ID] = p
	s.met.started.Inc()
	s.log.Info().Str("job", j.ID).Str("spider", j.Spider).Int("pid", j.PID).Msg("job started")
	go s.watch(p)
	return nil
}

// watch follows the crawl's log while it runs (the live report's
// address, progress lines, errors) and records how the process ended.
func (s *Service) watch(p *proc) {
	defer close(p.done)
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	tail := &logTail{path: filepath.Join(s.jobDir(p.job.ID), logName)}
	var werr error
	for loop := true; loop; {
		select {
		case werr = <-waited:
			loop = false
		case <-time.After(250 * time.Millisecond):
		}
		tail.read(p.noteLog)
	}
	j := p.job
	p.mu.Lock()
	stopping, cancels, lastError := p.stopping, p.cancels, p.lastError
	p.mu.Unlock()
	code := -1
	if st := p.cmd.ProcessState; st != nil {
		code = st.ExitCode()
	}
	var state State
	var reason string
	var failures []MonitorFailure
	switch {
	case stopping:
		// The service stops: the job stays "running" for the next one.
		s.mu.Lock()
		delete(s.running, j.ID)
		j.PID = 0
		s.db.updateJob(context.Background(), j)
		s.mu.Unlock()
		return
	case cancels > 0:
		state, reason = Cancelled, "cancelled"
		if cancels > 1 {
			reason = "cancelled (aborted)"
		}
	case code == 0:
		state = Finished
	case code == exitMonitorFailed:
		state = Failed
		reason = "monitors failed"
		if res, err := readMonitors(filepath.Join(s.jobDir(j.ID), jobdirName, monitorName)); err == nil {
			failures = res.Failures
			parts := make([]string, len(failures))
			for i, f := range failures {
				parts[i] = f.Monitor + ": " + f.Reason
				s.met.monitorFailures.WithLabelValues(f.Monitor).Inc()
			}
			if len(parts) > 0 {
				reason += ": " + strings.Join(parts, "; ")
			}
		} else {
			reason += " (monitors.json unreadable: " + err.Error() + ")"
		}
		s.met.monitorFailedJobs.Inc()
	default:
		state = Failed
		var ee *exec.ExitError
		switch {
		case errors.As(werr, &ee) && code == -1:
			reason = "the crawl process was killed (" + ee.Error() + ")"
		case werr != nil && code == -1:
			reason = "the crawl process failed: " + werr.Error()
		default:
			reason = "the crawl exited with status " + strconv.Itoa(code)
		}
		if lastError != "" {
			reason += ": " + lastError
		} else if out := lastLines(filepath.Join(s.jobDir(j.ID), outputName), 3); out != "" {
			reason += ": " + out
		}
	}
	var c *int
	if code >= 0 {
		c = &code
	}
	s.mu.Lock()
	delete(s.running, j.ID)
	j.MonitorFailures = failures
	s.finish(j, state, reason, c)
	s.mu.Unlock()
	s.poke()
}

// finish records a job's final state; s.mu is held.
func (s *Service) finish(j *Job, state State, reason string, code *int) {
	now := s.now()
	if reason == "" {
		reason = j.Reason // keep "resumed after a restart"
	}
	j.State, j.Reason, j.Ended, j.ExitCode, j.PID = state, reason, &now, code, 0
	if err := s.db.updateJob(context.Background(), j); err != nil {
		s.log.Error().Err(err).Str("job", j.ID).Msg("recording the job's end")
	}
	ev := s.log.Info()
	if state == Failed {
		ev = s.log.Warn()
	}
	ev.Str("job", j.ID).Str("state", string(state)).Str("reason", reason).Msg("job ended")
}

// noteLog reads one JSON log line of the crawl: the live report's address,
// progress lines, errors.
func (p *proc) noteLog(line []byte) {
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var rec map[string]any
	if json.Unmarshal(line, &rec) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if u, ok := rec["report"].(string); ok && strings.HasPrefix(u, "http://127.0.0.1:") {
		p.reportURL = u
	}
	if _, ok := rec["pages_per_min"]; ok {
		delete(rec, "message")
		delete(rec, "level")
		p.progress = rec
	}
	if lvl, _ := rec["level"].(string); lvl == "error" || lvl == "fatal" {
		msg, _ := rec["message"].(string)
		if e, ok := rec["error"].(string); ok {
			msg += ": " + e
		}
		p.lastError = msg
	}
}

// Cancel stops job id: a queued job is cancelled at once; a running one is
// asked to stop gracefully (SIGTERM: nothing new is sent, in-flight
// requests finish, the state is saved), and a second Cancel aborts it
// (SIGINT, the crawl's second signal). It
// returns the job and what was done: "cancelled", "stopping", "aborting",
// or "ended" for a job that had already ended.
func (s *Service) Cancel(ctx context.Context, id string) (*Job, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.running[id]; ok {
		p.mu.Lock()
		p.cancels++
		n := p.cancels
		p.mu.Unlock()
		// The crawl's first signal stops it, the second aborts it. The
		// second is SIGINT: two SIGTERMs sent before the crawl took the
		// first would reach it as one, and the abort would be lost.
		sig := syscall.SIGTERM
		if n > 1 {
			sig = syscall.SIGINT
		}
		p.signal(sig)
		j := *p.job // a copy: the job's watcher changes it under s.mu
		if n == 1 {
			s.log.Info().Str("job", id).Msg("stopping the job gracefully")
			return &j, "stopping", nil
		}
		s.log.Info().Str("job", id).Msg("aborting the job")
		return &j, "aborting", nil
	}
	j, err := s.db.job(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if j.State != Queued {
		return j, "ended", nil
	}
	s.finish(j, Cancelled, "cancelled before it started", nil)
	return j, "cancelled", nil
}

// recoverJobs handles the jobs a previous service left running: it waits
// for their processes to end (a crawl whose service died gets SIGTERM and
// saves its state), then queues them again or fails them.
func (s *Service) recoverJobs(ctx context.Context) error {
	jobs, err := s.db.jobs(ctx, JobFilter{State: Running, Limit: 1 << 20})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.PID > 0 {
			s.awaitGone(ctx, j)
		}
		j.PID = 0
		if s.cfg.Recover == Fail {
			s.finish(j, Failed, "the service stopped while the job ran (SERVE_RECOVER=fail)", nil)
			continue
		}
		j.State, j.Reason = Queued, "resumed after a restart of the service"
		if err := s.db.updateJob(ctx, j); err != nil {
			return err
		}
		s.log.Info().Str("job", j.ID).Msg("job queued again after a restart of the service")
	}
	return nil
}

// awaitGone waits up to a minute for the process of j, if it still runs,
// to end, then kills it. A process is j's only when its command line names
// j's folder (a PID may have been reused).
func (s *Service) awaitGone(ctx context.Context, j *Job) {
	mine := func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", j.PID))
		return err == nil && bytes.Contains(b, []byte(s.jobDir(j.ID)))
	}
	deadline := time.Now().Add(time.Minute)
	for mine() {
		if time.Now().After(deadline) {
			syscall.Kill(j.PID, syscall.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail reads the lines a growing file gets, from where it stopped.
type logTail struct {
	path    string
	off     int64
	pending []byte
}

func (t *logTail) read(line func([]byte)) {
	f, err := os.Open(t.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		b, err := r.ReadBytes('\n')
		t.off += int64(len(b))
		t.pending = append(t.pending, b...)
		if err != nil {
			return
		}
		line(t.pending)
		t.pending = t.pending[:0]
	}
}

// lastLines returns the last n lines of a small file, joined by " | ".
func lastLines(path string, n int) string {
	b, err := tailFile(path, n)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines, " | ")
}
