package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/observe/metrics"
	"github.com/gocrawl/gocrawl/observe/report"
	"github.com/gocrawl/gocrawl/settings"
)

// Every crawl run by the CLI is measured by a metrics.Monitor: the
// per-scope taxonomy and start rate in the stats and the summary, the
// LOGSTATS_INTERVAL progress line, the live display, METRICS_ADDR and
// STATS_DUMP_FILE. crawl calls startMetrics before engine.New and
// finishMetrics after Run; the summary section below prints the result.

func init() { summarySections = append(summarySections, metricsSummary) }

// finished holds each crawl's final metrics until its summary is printed.
var finished sync.Map // *engine.Result -> finishedMetrics

type finishedMetrics struct {
	snap metrics.Snapshot
	top  int
}

// startMetrics prepares the monitor of a crawl with settings s and adds its
// recorder to the engine's observers.
func (a *App) startMetrics(s *settings.Settings, opts *engine.Options) (*metrics.Monitor, error) {
	mon, err := metrics.NewMonitor(s, metrics.MonitorOptions{Clock: opts.Clock, Terminal: a.Stderr})
	if err != nil {
		return nil, err
	}
	// METRICS_ADDR serves the report of the crawl so far at "/".
	refresh := max(2*time.Second, s.Seconds("METRICS_SERIES_INTERVAL"))
	mon.Handle("/", report.Handler(func() *report.Data { return report.FromDump(mon.Dump(""), "the running crawl") },
		report.Options{Scopes: s.Int("METRICS_SUMMARY_SCOPES")}, refresh))
	opts.Observers = append(opts.Observers, mon.Recorder())
	return mon, nil
}

// finishMetrics stops the monitor, writes the metrics into the stats (and
// refreshes res.Stats with them) and STATS_DUMP_FILE.
func (a *App) finishMetrics(mon *metrics.Monitor, e *engine.Engine, s *settings.Settings, res *engine.Result, log zerolog.Logger) {
	reason := ""
	if res != nil {
		reason = res.Reason
	}
	snap, err := mon.Finish(reason)
	if err != nil {
		log.Error().Err(err).Msg("could not write the stats dump")
	}
	if res == nil {
		return
	}
	res.Stats = e.Crawler().Stats.Snapshot()
	finished.Store(res, finishedMetrics{snap: snap, top: s.Int("METRICS_SUMMARY_SCOPES")})
	if path := s.String("STATS_DUMP_FILE"); path != "" && err == nil {
		log.Info().Str("json", path).Str("csv", metrics.ScopesCSVPath(path)).Msg("stats written")
	}
}

// takeFinished returns (and forgets) the final metrics of res's crawl.
func takeFinished(res *engine.Result) (finishedMetrics, bool) {
	v, ok := finished.LoadAndDelete(res)
	if !ok {
		return finishedMetrics{}, false
	}
	return v.(finishedMetrics), true
}

// metricsSummary adds the politeness lines to the end-of-crawl summary:
// the observed start rate, retries and backoff, then one line per scope
// (the METRICS_SUMMARY_SCOPES most requested).
func metricsSummary(tw io.Writer, res *engine.Result) {
	f, ok := takeFinished(res)
	if !ok {
		return
	}
	g := f.snap.Global
	var backoff float64
	for _, sc := range f.snap.Scopes {
		backoff += sc.BackoffSeconds
	}
	fmt.Fprintf(tw, "outcomes\t%d ok, %d http 429, %d other 4xx/5xx, %d timeouts, %d network errors; %d retries\n",
		g.OK, g.HTTP429, g.OtherErrors, g.Timeouts, g.NetworkErrors, g.Retries)
	fmt.Fprintf(tw, "start rate\t%.1f admissions/s; at most %d in 1 s, %d in 100 ms, %d in the first 500 ms; peak %d in flight\n",
		f.snap.AdmissionsPerSecond, g.MaxStarts1s, g.MaxStarts100ms, g.StartsFirst500ms, g.PeakInFlight)
	fmt.Fprintf(tw, "backing off\t%s over %d scopes\n", time.Duration(backoff*float64(time.Second)).Round(time.Millisecond), len(f.snap.Scopes))
	var buf bytes.Buffer
	if err := metrics.WriteSummary(&buf, f.snap, f.top); err != nil {
		return
	}
	fmt.Fprintln(tw, "per scope:")
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line != "" {
			io.WriteString(tw, "  "+line)
		}
	}
}
