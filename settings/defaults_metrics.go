package settings

import "fmt"

// Metrics settings: per-scope measurements, progress display, Prometheus.
// LOGSTATS_INTERVAL, STATS_DUMP, STATS_DUMP_FILE and METRICS_ADDR are in
// defaults.go.
func init() {
	progress := NewType(`"auto", "on" or "off"`, func(v any) (any, error) {
		s, err := String.Convert(v)
		if err != nil {
			return nil, err
		}
		switch s {
		case "auto", "on", "off":
			return s, nil
		}
		return nil, fmt.Errorf("%q is not auto, on or off", s)
	})
	for _, d := range []Def{
		{Name: "METRICS_SCOPE_LABEL_LIMIT", Type: NonNegative(Int), Default: 20, Doc: "Most distinct scope label values exported on METRICS_ADDR; later scopes are summed under scope=\"other\" (0 = 20)."},
		{Name: "METRICS_SCOPE_STATS_LIMIT", Type: NonNegative(Int), Default: 50, Doc: "Per-scope metrics of this many most-requested scopes are written into the stats (metrics/scope/<scope>/...); 0 = every scope."},
		{Name: "METRICS_SUMMARY_SCOPES", Type: NonNegative(Int), Default: 10, Doc: "Scopes listed in the end-of-crawl summary, most requested first (0 = all)."},
		{Name: "METRICS_SERIES_INTERVAL", Type: NonNegative(Float), Default: 1.0, Doc: "Seconds between two samples of the crawl's time series (ok/s, refusals/s, in flight, delay, backoff level per scope), kept in the STATS_DUMP_FILE and plotted by `gocrawl report` (0 = 1)."},
		{Name: "METRICS_SERIES_SCOPES", Type: NonNegative(Int), Default: 10, Doc: "Scopes with a time series of their own: the most requested (a scope keeps its series until one with twice its requests needs the room; 0 = none, only the whole crawl)."},
		{Name: "METRICS_SERIES_POINTS", Type: NonNegative(Int), Default: 600, Doc: "Most points per time series; when a series is full, neighbouring points are merged and the interval doubles, so memory stays bounded on long crawls (at least 16)."},
		{Name: "DEMO_EXPERIMENT_PAGES", Type: NonNegative(Int), Default: 300, Doc: "Pages per host of the two-host politeness experiment run by `gocrawl demo --experiment` (about a minute at 300; each configuration stops after 90 s)."},
		{Name: "PROGRESS_DISPLAY", Type: progress, Default: "auto", Doc: "Live one-line progress display on standard error: auto (when it is a terminal), on, off."},
	} {
		Register(d)
	}
}
