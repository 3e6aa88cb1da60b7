// Package report renders a crawl as one self-contained HTML page: inline
// SVG plots of every busy scope over time (ok/s, refusals/s, requests in
// flight, delay and backoff level, with the configured limits drawn on
// them), the status, error and dropped-request tables, and the slowest
// scopes. The page needs no network and no script (the live page served
// at METRICS_ADDR adds one, to refresh itself).
//
// A report is built from what a crawl leaves behind (Load): the
// STATS_DUMP_FILE JSON (stats, per-scope measurements, time series and
// limits), its per-scope CSV, or a job directory (JOBDIR: stats, queued
// requests and throttling state of a paused crawl). `gocrawl report RUN`
// writes it; Handler serves it live.
package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/observe/metrics"
	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/throttling"
)

// Data is everything a report shows. Fields a source does not have are
// empty: a scopes CSV has only Scopes; a job directory has no time series.
type Data struct {
	// Source names where the data comes from ("run.json", "JOBDIR crawls/run1").
	Source string
	// Spider is the spider's name, when known.
	Spider string
	// Reason is why the crawl ended ("" while it runs).
	Reason string
	// Stats are the crawl's stats.
	Stats map[string]float64
	// Metrics are the crawl-wide and per-scope measurements; Scopes
	// repeats its scopes (or the CSV's).
	Metrics *metrics.Snapshot
	Scopes  []metrics.ScopeSnapshot
	// Series is the crawl over time, nil without one.
	Series *metrics.Series
	// Limits are each scope's throttling limits at the end.
	Limits map[string]metrics.ScopeLimits
	// Job describes a job directory's state.
	Job *Job
	// Live is set for the page served during a crawl: it refreshes itself
	// every Refresh.
	Live    bool
	Refresh time.Duration
	// Generated is when the page was made.
	Generated time.Time
}

// Job is what a job directory holds besides its stats.
type Job struct {
	Dir     string
	Spider  string
	Created time.Time
	// Queued and Delayed count the requests waiting (Delayed: held back by
	// a throttling_delay).
	Queued, Delayed int
	// QueuedByScope counts the queued requests by scope set, most first.
	QueuedByScope []ScopeCount
	// Throttling is the saved state of every scope.
	Throttling []throttling.ScopeSnapshot
	// Feeds are the feed files and the bytes a resume keeps.
	Feeds map[string]int64
}

// ScopeCount is a number of queued requests for a set of scopes.
type ScopeCount struct {
	Scopes string
	Count  int
}

// ErrSource is the kind of error for a RUN that is not a stats dump, a
// scopes CSV or a job directory.
var ErrSource = errors.New("not a crawl's stats dump, scopes CSV or job directory")

// Load reads the data of a finished (or paused) crawl from path: a
// STATS_DUMP_FILE (JSON; its per-scope CSV beside it is not needed, the
// JSON has every scope), a per-scope CSV alone (the scopes table only), or
// a JOBDIR directory (opened read-only: it must not be in use).
func Load(path string) (*Data, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return loadJob(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return loadCSV(f, path)
	}
	return loadDump(f, path)
}

// FromDump is the data of a stats dump (metrics.Dump).
func FromDump(d metrics.Dump, source string) *Data {
	snap := d.Metrics
	return &Data{Source: source, Spider: d.Spider, Reason: d.Reason, Stats: d.Stats, Metrics: &snap, Scopes: snap.Scopes,
		Series: d.Series, Limits: d.Limits}
}

func loadDump(r io.Reader, path string) (*Data, error) {
	dec := json.NewDecoder(r)
	var d metrics.Dump
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrSource, err)
	}
	if d.Stats == nil && len(d.Metrics.Scopes) == 0 && d.Metrics.Start.IsZero() {
		return nil, fmt.Errorf("%s: %w: a JSON document without stats or metrics (STATS_DUMP_FILE writes them)", path, ErrSource)
	}
	return FromDump(d, path), nil
}

// loadCSV reads the per-scope CSV of a stats dump.
func loadCSV(r io.Reader, path string) (*Data, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrSource, err)
	}
	if len(rows) == 0 || len(rows[0]) < 2 || rows[0][0] != "scope" {
		return nil, fmt.Errorf("%s: %w: the first column of the header must be \"scope\"", path, ErrSource)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(row []string, name string) float64 {
		i, ok := col[name]
		if !ok || i >= len(row) {
			return 0
		}
		v, _ := strconv.ParseFloat(row[i], 64)
		return v
	}
	d := &Data{Source: path, Limits: map[string]metrics.ScopeLimits{}}
	for n, row := range rows[1:] {
		if len(row) != len(rows[0]) {
			return nil, fmt.Errorf("%s:%d: %d columns, the header has %d", path, n+2, len(row), len(rows[0]))
		}
		sc := metrics.ScopeSnapshot{Scope: row[0], Counts: metrics.Counts{
			Requests: int64(num(row, "requests")), Retries: int64(num(row, "retries")), Responses: int64(num(row, "responses")),
			OK: int64(num(row, "ok")), HTTP429: int64(num(row, "http_429")), OtherErrors: int64(num(row, "other_4xx_5xx")),
			Timeouts: int64(num(row, "timeouts")), NetworkErrors: int64(num(row, "network_errors")), Cancelled: int64(num(row, "cancelled")),
			PeakInFlight: int64(num(row, "peak_inflight")), MaxStarts1s: int(num(row, "max_starts_1s")),
			MaxStarts100ms: int(num(row, "max_starts_100ms")), StartsFirst500ms: int(num(row, "starts_first_500ms")),
			Seconds: num(row, "seconds"), OKPerSecond: num(row, "ok_per_second"), CompletedPerSecond: num(row, "completed_per_second"),
		}, BackoffSeconds: num(row, "backoff_seconds"), BackoffLevel: int(num(row, "backoff_level")),
			Delay: time.Duration(num(row, "delay_seconds") * float64(time.Second))}
		d.Scopes = append(d.Scopes, sc)
	}
	return d, nil
}

// loadJob reads a job directory, read-only.
func loadJob(dir string) (*Data, error) {
	j, err := jobdir.Open(dir, "", jobdir.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer j.Close()
	m := j.Metadata()
	d := &Data{Source: "JOBDIR " + dir, Spider: m.Spider, Job: &Job{Dir: dir, Spider: m.Spider, Created: m.Created}}
	if d.Stats, err = j.LoadStats(); err != nil {
		return nil, err
	}
	if _, err := j.LoadThrottling(&d.Job.Throttling); err != nil {
		return nil, err
	}
	if d.Job.Feeds, err = j.FeedOffsets(); err != nil {
		return nil, err
	}
	counts, delayed, err := jobdir.QueueCounts(j)
	if err != nil {
		return nil, err
	}
	d.Job.Delayed, d.Job.Queued = delayed, delayed
	for _, n := range counts {
		d.Job.Queued += n
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		d.Job.QueuedByScope = append(d.Job.QueuedByScope, ScopeCount{Scopes: strings.ReplaceAll(k, "\x00", " + "), Count: counts[k]})
	}
	slices.SortStableFunc(d.Job.QueuedByScope, func(a, b ScopeCount) int { return b.Count - a.Count })
	d.Limits = map[string]metrics.ScopeLimits{}
	for _, s := range d.Job.Throttling {
		d.Limits[s.Scope] = metrics.ScopeLimits{Delay: s.Delay, Concurrency: s.Concurrency, BackoffLevel: s.BackoffLevel}
	}
	return d, nil
}
