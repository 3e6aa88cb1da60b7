package service

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
)

// State is where a job is in its life.
type State string

// The states of a job. Queued and running jobs are live; the others are
// final.
const (
	Queued    State = "queued"
	Running   State = "running"
	Finished  State = "finished"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

// States lists every state, in the order of a job's life.
var States = []State{Queued, Running, Finished, Failed, Cancelled}

// Final reports whether a job in state s will not change any more.
func (s State) Final() bool { return s == Finished || s == Failed || s == Cancelled }

// Job is one run of a spider under the service.
type Job struct {
	ID       string            `json:"id"`
	Spider   string            `json:"spider"`
	Args     map[string]string `json:"args"`
	Settings map[string]string `json:"settings"` // NAME -> value as YAML text, as `-s NAME=VALUE`
	State    State             `json:"state"`
	// Reason says why a job failed or was cancelled, or how a live job got
	// where it is (resumed after a restart).
	Reason string `json:"reason,omitempty"`
	// MonitorFailures are the failed checks of the job's monitors, read from
	// its monitors.json when the crawl exited with status 3.
	MonitorFailures []MonitorFailure `json:"monitor_failures,omitempty"`
	Schedule        string           `json:"schedule,omitempty"` // the schedule that started it
	ExitCode        *int             `json:"exit_code,omitempty"`
	Created         time.Time        `json:"created"`
	Started         *time.Time       `json:"started,omitempty"`
	Ended           *time.Time       `json:"ended,omitempty"`
	PID             int              `json:"pid,omitempty"` // the crawl process, while it runs
}

// Schedule starts a job of a spider at the times of a cron expression.
type Schedule struct {
	ID       string            `json:"id"`
	Spider   string            `json:"spider"`
	Cron     string            `json:"cron"`
	Args     map[string]string `json:"args"`
	Settings map[string]string `json:"settings"`
	// Overlap lets a run start while the previous run of the schedule is
	// still queued or running; by default that run is skipped.
	Overlap bool       `json:"overlap"`
	Created time.Time  `json:"created"`
	LastRun *time.Time `json:"last_run,omitempty"`
	NextRun time.Time  `json:"next_run"`
}

// store keeps the jobs and schedules in SQLite (jobs.db in the service's
// directory).
type store struct{ db *sql.DB }

const schema = `
CREATE TABLE IF NOT EXISTS jobs (
	id TEXT PRIMARY KEY,
	spider TEXT NOT NULL,
	args TEXT NOT NULL,
	settings TEXT NOT NULL,
	state TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT '',
	monitor_failures TEXT NOT NULL DEFAULT '[]',
	schedule TEXT NOT NULL DEFAULT '',
	exit_code INTEGER,
	created INTEGER NOT NULL,
	started INTEGER,
	ended INTEGER,
	pid INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, created);
CREATE TABLE IF NOT EXISTS schedules (
	id TEXT PRIMARY KEY,
	spider TEXT NOT NULL,
	cron TEXT NOT NULL,
	args TEXT NOT NULL,
	settings TEXT NOT NULL,
	overlap INTEGER NOT NULL,
	created INTEGER NOT NULL,
	last_run INTEGER,
	next_run INTEGER NOT NULL
);`

func openStore(dir string) (*store, error) {
	dsn := "file:" + filepath.Join(dir, "jobs.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one writer; the service's load is a few rows a second
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening %s: %w", filepath.Join(dir, "jobs.db"), err)
	}
	return &store{db: db}, nil
}

func (s *store) Close() error { return s.db.Close() }

// newID returns a random identifier: 12 hex digits.
func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and slices of structs of strings always encode
	}
	return string(b)
}

func unixMilli(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

func fromMilli(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMilli(v.Int64).UTC()
	return &t
}

func (s *store) insertJob(ctx context.Context, j *Job) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO jobs (id, spider, args, settings, state, reason, schedule, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.Spider, mustJSON(j.Args), mustJSON(j.Settings), string(j.State), j.Reason, j.Schedule, j.Created.UnixMilli())
	return err
}

// updateJob writes the changing fields of j.
func (s *store) updateJob(ctx context.Context, j *Job) error {
	var code any
	if j.ExitCode != nil {
		code = *j.ExitCode
	}
	_, err := s.db.ExecContext(ctx, `UPDATE jobs SET state = ?, reason = ?, monitor_failures = ?, exit_code = ?, started = ?, ended = ?, pid = ? WHERE id = ?`,
		string(j.State), j.Reason, mustJSON(j.MonitorFailures), code, unixMilli(j.Started), unixMilli(j.Ended), j.PID, j.ID)
	return err
}

const jobColumns = `id, spider, args, settings, state, reason, monitor_failures, schedule, exit_code, created, started, ended, pid`

func scanJob(sc interface{ Scan(...any) error }) (*Job, error) {
	var (
		j              Job
		args, sets, mf string
		code           sql.NullInt64
		created        int64
		started, ended sql.NullInt64
		state          string
	)
	if err := sc.Scan(&j.ID, &j.Spider, &args, &sets, &state, &j.Reason, &mf, &j.Schedule, &code, &created, &started, &ended, &j.PID); err != nil {
		return nil, err
	}
	j.State = State(state)
	if err := errors.Join(json.Unmarshal([]byte(args), &j.Args), json.Unmarshal([]byte(sets), &j.Settings), json.Unmarshal([]byte(mf), &j.MonitorFailures)); err != nil {
		return nil, fmt.Errorf("job %s: %w", j.ID, err)
	}
	if code.Valid {
		c := int(code.Int64)
		j.ExitCode = &c
	}
	j.Created = time.UnixMilli(created).UTC()
	j.Started, j.Ended = fromMilli(started), fromMilli(ended)
	return &j, nil
}

var errNotFound = errors.New("not found")

func (s *store) job(ctx context.Context, id string) (*Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	return j, err
}

// JobFilter selects jobs; empty fields select all.
type JobFilter struct {
	State    State
	Spider   string
	Schedule string
	Limit    int // 0 = 200
}

// jobs returns the jobs matching f, newest first.
func (s *store) jobs(ctx context.Context, f JobFilter) ([]*Job, error) {
	q := `SELECT ` + jobColumns + ` FROM jobs WHERE 1=1`
	var args []any
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, string(f.State))
	}
	if f.Spider != "" {
		q += ` AND spider = ?`
		args = append(args, f.Spider)
	}
	if f.Schedule != "" {
		q += ` AND schedule = ?`
		args = append(args, f.Schedule)
	}
	if f.Limit <= 0 {
		f.Limit = 200
	}
	q += ` ORDER BY created DESC, rowid DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// oldestQueued returns the job that has waited longest, or nil.
func (s *store) oldestQueued(ctx context.Context) (*Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE state = 'queued' ORDER BY created, rowid LIMIT 1`))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return j, err
}

// countByState counts the jobs in each state.
func (s *store) countByState(ctx context.Context) (map[State]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, count(*) FROM jobs GROUP BY state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[State]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[State(st)] = n
	}
	return out, rows.Err()
}

// liveJobsOf reports whether schedule id has a queued or running job.
func (s *store) liveJobsOf(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE schedule = ? AND state IN ('queued', 'running')`, id).Scan(&n)
	return n > 0, err
}

func (s *store) insertSchedule(ctx context.Context, sc *Schedule) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO schedules (id, spider, cron, args, settings, overlap, created, last_run, next_run) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sc.ID, sc.Spider, sc.Cron, mustJSON(sc.Args), mustJSON(sc.Settings), sc.Overlap, sc.Created.UnixMilli(), unixMilli(sc.LastRun), sc.NextRun.UnixMilli())
	return err
}

func (s *store) updateScheduleRuns(ctx context.Context, sc *Schedule) error {
	_, err := s.db.ExecContext(ctx, `UPDATE schedules SET last_run = ?, next_run = ? WHERE id = ?`, unixMilli(sc.LastRun), sc.NextRun.UnixMilli(), sc.ID)
	return err
}

func (s *store) deleteSchedule(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM schedules WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errNotFound
	}
	return nil
}

func (s *store) schedules(ctx context.Context) ([]*Schedule, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, spider, cron, args, settings, overlap, created, last_run, next_run FROM schedules ORDER BY created`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Schedule
	for rows.Next() {
		var (
			sc         Schedule
			args, sets string
			created    int64
			last       sql.NullInt64
			next       int64
		)
		if err := rows.Scan(&sc.ID, &sc.Spider, &sc.Cron, &args, &sets, &sc.Overlap, &created, &last, &next); err != nil {
			return nil, err
		}
		if err := errors.Join(json.Unmarshal([]byte(args), &sc.Args), json.Unmarshal([]byte(sets), &sc.Settings)); err != nil {
			return nil, fmt.Errorf("schedule %s: %w", sc.ID, err)
		}
		sc.Created = time.UnixMilli(created).UTC()
		sc.LastRun = fromMilli(last)
		sc.NextRun = time.UnixMilli(next).UTC()
		out = append(out, &sc)
	}
	return out, rows.Err()
}
