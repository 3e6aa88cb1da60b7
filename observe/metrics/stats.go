package metrics

import "github.com/gocrawl/gocrawl/observe/stats"

// field is one named number of Counts, in a fixed order shared by the stats
// keys and the CSV columns.
type field struct {
	name string
	get  func(c *ScopeSnapshot) float64
}

var fields = []field{
	{"requests", func(c *ScopeSnapshot) float64 { return float64(c.Requests) }},
	{"retries", func(c *ScopeSnapshot) float64 { return float64(c.Retries) }},
	{"responses", func(c *ScopeSnapshot) float64 { return float64(c.Responses) }},
	{"ok", func(c *ScopeSnapshot) float64 { return float64(c.OK) }},
	{"http_429", func(c *ScopeSnapshot) float64 { return float64(c.HTTP429) }},
	{"other_4xx_5xx", func(c *ScopeSnapshot) float64 { return float64(c.OtherErrors) }},
	{"timeouts", func(c *ScopeSnapshot) float64 { return float64(c.Timeouts) }},
	{"network_errors", func(c *ScopeSnapshot) float64 { return float64(c.NetworkErrors) }},
	{"ok_per_second", func(c *ScopeSnapshot) float64 { return c.OKPerSecond }},
	{"completed_per_second", func(c *ScopeSnapshot) float64 { return c.CompletedPerSecond }},
	{"peak_inflight", func(c *ScopeSnapshot) float64 { return float64(c.PeakInFlight) }},
	{"max_starts_1s", func(c *ScopeSnapshot) float64 { return float64(c.MaxStarts1s) }},
	{"max_starts_100ms", func(c *ScopeSnapshot) float64 { return float64(c.MaxStarts100ms) }},
	{"starts_first_500ms", func(c *ScopeSnapshot) float64 { return float64(c.StartsFirst500ms) }},
	{"seconds", func(c *ScopeSnapshot) float64 { return c.Seconds }},
	{"backoff_seconds", func(c *ScopeSnapshot) float64 { return c.BackoffSeconds }},
}

// StatsPrefix starts every stats key written by WriteStats.
const StatsPrefix = "metrics/"

// WriteStats stores the snapshot in st: the crawl-wide numbers as
// "metrics/<name>" (requests, ok, http_429, ..., admissions_per_second) and
// those of the scopeLimit most requested scopes as
// "metrics/scope/<scope>/<name>" (all scopes when scopeLimit <= 0; the
// per-scope CSV of STATS_DUMP_FILE always has every scope).
func WriteStats(st *stats.Collector, s Snapshot, scopeLimit int) {
	g := ScopeSnapshot{Counts: s.Global}
	for _, sc := range s.Scopes {
		g.BackoffSeconds += sc.BackoffSeconds
	}
	for _, f := range fields {
		st.Set(StatsPrefix+f.name, f.get(&g))
	}
	st.Set(StatsPrefix+"admissions_per_second", s.AdmissionsPerSecond)
	st.Set(StatsPrefix+"scopes", float64(len(s.Scopes)))
	for _, sc := range s.Top(scopeLimit) {
		for _, f := range fields {
			st.Set(StatsPrefix+"scope/"+sc.Scope+"/"+f.name, f.get(&sc))
		}
	}
}
