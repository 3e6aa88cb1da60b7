package service

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/gocrawl/gocrawl/observe/metrics"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
)

// JobResult is what a job that ended did: its final figures, read from
// the stats dump its crawl writes when it ends (STATS_DUMP_FILE in the
// job's directory). The job list, a job's status and the page show them
// once the live progress is gone.
type JobResult struct {
	// Reason is why the crawl ended: "finished", "shutdown" (cancelled),
	// "closespider_timeout", ...
	Reason string `json:"reason,omitempty"`
	// Pages are the responses received (downloader/response_count), as
	// the live progress counts them.
	Pages int64 `json:"pages"`
	// Items are the items scraped (item_scraped_count).
	Items int64 `json:"items"`
	// Errors are the downloads that failed and the callbacks that
	// returned an error or panicked, as the crawl's summary counts them.
	Errors int64 `json:"errors"`
	// Duration is how long the crawl ran, in seconds.
	Duration float64 `json:"duration_seconds"`
}

// resultOf reads a job's figures from a stats dump (metrics.Dump).
func resultOf(b []byte) (*JobResult, error) {
	var dump metrics.Dump
	if err := json.Unmarshal(b, &dump); err != nil {
		return nil, err
	}
	st := dump.Stats
	n := func(k string) int64 { return int64(st[k]) }
	return &JobResult{
		Reason:   dump.Reason,
		Pages:    n("downloader/response_count"),
		Items:    n(stats.ItemScrapedCount),
		Errors:   n("downloader/exception_count") + n("spider_exceptions/count"),
		Duration: st["elapsed_time_seconds"],
	}, nil
}

// result returns the final figures of job j: nil while it is queued or
// running, and for a job whose crawl wrote no stats dump (cancelled
// before it started, or a crawl that could not start). A final job's
// figures never change: the dump is read once, then kept in memory.
func (s *Service) result(j *Job) *JobResult {
	if !j.State.Final() {
		return nil
	}
	if r, ok := s.results.Load(j.ID); ok {
		return r.(*JobResult)
	}
	b, err := os.ReadFile(filepath.Join(s.jobDir(j.ID), statsName))
	if err != nil {
		return nil // no dump (yet: the job ended a moment ago, the file is written first)
	}
	r, err := resultOf(b)
	if err != nil {
		s.log.Warn().Err(err).Str("job", j.ID).Msg("the job's stats dump does not read: its figures are not shown")
		return nil
	}
	s.results.Store(j.ID, r)
	return r
}

// redactedSettings returns a job's or schedule's settings (-s NAME=VALUE
// text) as the API and the page show them: redacted as `gocrawl
// settings` shows them (settings.RedactArg). The stored job keeps them as
// given, to run it.
func redactedSettings(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = settings.RedactArg(k, v)
	}
	return out
}

// redactedSchedules returns copies of scs with their settings redacted.
func redactedSchedules(scs []*Schedule) []*Schedule {
	out := make([]*Schedule, len(scs))
	for i, sc := range scs {
		c := *sc
		c.Settings = redactedSettings(sc.Settings)
		out[i] = &c
	}
	return out
}
