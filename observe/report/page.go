package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/internal/version"
	"github.com/gocrawl/gocrawl/observe/metrics"
	"github.com/gocrawl/gocrawl/observe/stats"
)

// Options shape a report.
type Options struct {
	// Scopes is how many scopes the scope table lists (most requested
	// first); 0 means 50. Every scope with a time series gets its plots.
	Scopes int
	// Slowest is how many scopes the slowest-scopes table lists; 0 means 10.
	Slowest int
}

// Write renders d as one self-contained HTML page: styles and SVG plots
// inline, no network, and no script unless d.Live (then a small one
// refreshes the page every d.Refresh, with a <noscript> meta refresh as a
// fallback).
func Write(w io.Writer, d *Data, opts Options) error {
	if opts.Scopes <= 0 {
		opts.Scopes = 50
	}
	if opts.Slowest <= 0 {
		opts.Slowest = 10
	}
	return pageTmpl.Execute(w, build(d, opts))
}

// view is what the template reads.
type view struct {
	Title, Subtitle string
	Source          string
	Cards           []card
	NoSeries        string
	Global          []template.HTML
	ScopePlots      []scopePlots
	MoreSeries      int
	Statuses        []row
	Changes         []row // recrawl change statuses, when the crawl kept records
	Errors          []row
	Dropped         []row
	Slowest         []scopeRow
	Scopes          []scopeRow
	MoreScopes      int
	Job             *jobView
	Stats           []row
	Live            bool
	RefreshSeconds  int
	Version         string
	Generated       string
}

type card struct{ Label, Value, Note string }

type row struct {
	Key, Value string
	// Share is the bar width, 0 to 100.
	Share float64
}

type scopePlots struct {
	Scope string
	Note  string
	Plots []template.HTML
}

type scopeRow struct {
	Scope                                      string
	Requests, OK, R429, Other, Errors, Peak    int64
	OKPerSec, Backoff, Delay, ConfDelay, Level string
	Concurrency                                string
}

type jobView struct {
	Dir, Spider, Created string
	Queued, Delayed      int
	Queue                []row
	MoreQueue            int
	Backoff              []row
	Feeds                []row
}

func build(d *Data, opts Options) view {
	v := view{Title: "gocrawl report", Source: d.Source, Live: d.Live, Version: version.Version}
	if d.Spider != "" {
		v.Title = "gocrawl report: " + d.Spider
	}
	gen := d.Generated
	if gen.IsZero() {
		gen = time.Now()
	}
	v.Generated = gen.UTC().Format("2006-01-02 15:04:05 MST")
	if d.Live {
		v.RefreshSeconds = max(1, int(d.Refresh.Round(time.Second)/time.Second))
	}
	st := d.Stats
	if st == nil {
		st = map[string]float64{}
	}
	v.Subtitle = subtitle(d, st)
	v.Cards = cards(d, st)
	v.Global, v.ScopePlots, v.NoSeries = plots(d)
	v.Statuses = prefixed(st, "downloader/response_status_count/")
	v.Errors = prefixed(st, "downloader/exception_type_count/")
	v.Changes = changes(st)
	for _, dr := range Dropped(st) {
		v.Dropped = append(v.Dropped, row{Key: dr.Class, Value: strconv.FormatInt(dr.Count, 10)})
	}
	shareOf(v.Dropped)
	scopes := d.Scopes
	v.Scopes = scopeRows(d, scopes, opts.Scopes)
	v.MoreScopes = max(0, len(scopes)-opts.Scopes)
	slow := slices.Clone(scopes)
	slow = slices.DeleteFunc(slow, func(s metrics.ScopeSnapshot) bool { return s.Requests == 0 })
	slices.SortStableFunc(slow, func(a, b metrics.ScopeSnapshot) int {
		if c := cmp.Compare(a.OKPerSecond, b.OKPerSecond); c != 0 {
			return c
		}
		return cmp.Compare(b.BackoffSeconds, a.BackoffSeconds)
	})
	if len(slow) > 1 { // one scope is not "the slowest" of anything
		v.Slowest = scopeRows(d, slow, opts.Slowest)
	}
	if d.Job != nil {
		v.Job = jobRows(d.Job)
	}
	for _, k := range slices.Sorted(maps.Keys(st)) {
		v.Stats = append(v.Stats, row{Key: k, Value: FormatStat(k, st[k])})
	}
	return v
}

func subtitle(d *Data, st map[string]float64) string {
	var parts []string
	switch {
	case d.Live:
		parts = append(parts, "running")
	case d.Reason != "":
		parts = append(parts, d.Reason)
	}
	if e := st["elapsed_time_seconds"]; e > 0 {
		parts = append(parts, "after "+roundDur(e))
	} else if d.Metrics != nil && d.Metrics.Global.Seconds > 0 {
		parts = append(parts, "for "+roundDur(d.Metrics.Global.Seconds))
	}
	if t := st["start_time"]; t > 0 {
		parts = append(parts, "started "+FormatStat("start_time", t))
	}
	if d.Job != nil {
		parts = append(parts, "paused job, created "+d.Job.Created.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, ", ")
}

func cards(d *Data, st map[string]float64) []card {
	n := func(k string) int64 { return int64(st[k]) }
	var cs []card
	add := func(label, value, note string) { cs = append(cs, card{label, value, note}) }
	add("requests", strconv.FormatInt(n("downloader/request_count"), 10), "")
	ok := n("downloader/response_ok_count")
	add("ok responses", strconv.FormatInt(ok, 10), "2xx")
	if d.Metrics != nil {
		g := d.Metrics.Global
		add("refused", strconv.FormatInt(g.HTTP429, 10), fmt.Sprintf("429 (%.1f%% of completed)", 100*g.Share429()))
		add("ok/s", strconv.FormatFloat(round1(g.OKPerSecond), 'f', -1, 64), "useful throughput")
		add("peak in flight", strconv.FormatInt(g.PeakInFlight, 10), fmt.Sprintf("%d starts in the first 500 ms", g.StartsFirst500ms))
	}
	add("errors", strconv.FormatInt(n("downloader/exception_count")+n("spider_exceptions/count"), 10), "downloads and callbacks")
	add("items", strconv.FormatInt(n(stats.ItemScrapedCount), 10), "")
	var drops int64
	for _, dr := range Dropped(st) {
		drops += dr.Count
	}
	add("dropped", strconv.FormatInt(drops, 10), "offsite, robots.txt, HTTP errors, depth, duplicates")
	return cs
}

// plots builds the crawl's and each scope's plots.
func plots(d *Data) (global []template.HTML, scopes []scopePlots, none string) {
	s := d.Series
	if s == nil || len(s.Global.T) == 0 {
		switch {
		case d.Job != nil:
			return nil, nil, "A job directory keeps no time series: run the crawl with STATS_DUMP_FILE set and report on that file for plots."
		case s == nil:
			return nil, nil, "This stats dump has no time series (it was written before gocrawl recorded them, or from a per-scope CSV)."
		}
		return nil, nil, "The crawl ended before the first sample (METRICS_SERIES_INTERVAL)."
	}
	xmax := s.Global.T[len(s.Global.T)-1]
	g := s.Global
	global = append(global,
		plot{ID: "global-responses", Title: "Responses, whole crawl", Unit: "per second", XMax: xmax, Lines: []line{
			{Name: "ok", Class: "ok", X: g.T, Y: g.OK},
			{Name: "refused", Class: "refused", X: g.T, Y: g.Refused},
			{Name: "errors", Class: "err", X: g.T, Y: g.Errors},
		}}.SVG(),
		plot{ID: "global-inflight", Title: "Requests in flight, whole crawl", Unit: "peak per interval", XMax: xmax, Integer: true, Lines: []line{
			{Name: "in flight", Class: "inflight", X: g.T, Y: g.InFlight},
		}}.SVG())
	for i, sc := range s.Scopes {
		id := "scope" + strconv.Itoa(i)
		sp := scopePlots{Scope: sc.Scope}
		if lim, ok := d.Limits[sc.Scope]; ok {
			sp.Note = fmt.Sprintf("configured: delay %s, concurrency %s", secs(lim.ConfiguredDelay), conc(lim.ConfiguredConcurrency))
		}
		var crefs, drefs []ref
		if sc.ConfiguredConcurrency > 0 {
			crefs = append(crefs, ref{Name: "configured", Class: "limit", Y: float64(sc.ConfiguredConcurrency)})
		}
		drefs = append(drefs, ref{Name: "configured", Class: "limit", Y: sc.ConfiguredDelay})
		concLine := line{Name: "limit", Class: "cur", X: sc.T, Y: unlimitedAsNaN(sc.Concurrency), Step: true}
		sp.Plots = []template.HTML{
			plot{ID: id + "-responses", Title: "Responses", Unit: "per second", XMax: xmax, Lines: []line{
				{Name: "ok", Class: "ok", X: sc.T, Y: sc.OK},
				{Name: "refused", Class: "refused", X: sc.T, Y: sc.Refused},
				{Name: "errors", Class: "err", X: sc.T, Y: sc.Errors},
			}}.SVG(),
			plot{ID: id + "-inflight", Title: "In flight", Unit: "requests", XMax: xmax, Integer: true, Refs: crefs, Lines: []line{
				{Name: "in flight", Class: "inflight", X: sc.T, Y: sc.InFlight}, concLine,
			}}.SVG(),
			plot{ID: id + "-delay", Title: "Delay between requests", Unit: "seconds", XMax: xmax, Refs: drefs, Lines: []line{
				{Name: "delay", Class: "delay", X: sc.T, Y: sc.Delay, Step: true},
			}}.SVG(),
			plot{ID: id + "-level", Title: "Backoff level", Unit: "steps", XMax: xmax, Integer: true, Lines: []line{
				{Name: "level", Class: "level", X: sc.T, Y: sc.Level, Step: true},
			}}.SVG(),
		}
		scopes = append(scopes, sp)
	}
	return global, scopes, ""
}

// unlimitedAsNaN hides the limit line where the concurrency is unlimited
// (0).
func unlimitedAsNaN(ys []float64) []float64 {
	out := make([]float64, len(ys))
	for i, y := range ys {
		out[i] = y
		if y <= 0 {
			out[i] = math.NaN()
		}
	}
	return out
}

func scopeRows(d *Data, scopes []metrics.ScopeSnapshot, limit int) []scopeRow {
	var out []scopeRow
	for i, s := range scopes {
		if i == limit {
			break
		}
		r := scopeRow{Scope: s.Scope, Requests: s.Requests, OK: s.OK, R429: s.HTTP429, Other: s.OtherErrors,
			Errors: s.Timeouts + s.NetworkErrors, Peak: s.PeakInFlight, OKPerSec: strconv.FormatFloat(round1(s.OKPerSecond), 'f', 1, 64),
			Backoff: roundDur(s.BackoffSeconds), Delay: secs(s.Delay.Seconds()), Level: strconv.Itoa(s.BackoffLevel), ConfDelay: "-", Concurrency: "-"}
		if lim, ok := d.Limits[s.Scope]; ok {
			r.Delay, r.Level = secs(lim.Delay), strconv.Itoa(lim.BackoffLevel)
			r.Concurrency = conc(lim.Concurrency)
			if d.Job == nil {
				r.ConfDelay = secs(lim.ConfiguredDelay)
				r.Concurrency += " of " + conc(lim.ConfiguredConcurrency)
			}
		}
		out = append(out, r)
	}
	return out
}

func jobRows(j *Job) *jobView {
	v := &jobView{Dir: j.Dir, Spider: j.Spider, Created: j.Created.UTC().Format(time.RFC3339), Queued: j.Queued, Delayed: j.Delayed}
	for i, q := range j.QueuedByScope {
		if i == 20 {
			v.MoreQueue = len(j.QueuedByScope) - 20
			break
		}
		v.Queue = append(v.Queue, row{Key: q.Scopes, Value: strconv.Itoa(q.Count)})
	}
	shareOf(v.Queue)
	now := time.Now()
	for _, s := range j.Throttling {
		if s.BackoffLevel == 0 && !s.BlockedUntil.After(now) {
			continue
		}
		val := fmt.Sprintf("delay %s, level %d, concurrency %s", secs(s.Delay), s.BackoffLevel, conc(s.Concurrency))
		if s.BlockedUntil.After(now) {
			val += ", blocked until " + s.BlockedUntil.UTC().Format(time.RFC3339)
		}
		v.Backoff = append(v.Backoff, row{Key: s.Scope, Value: val})
	}
	for _, p := range slices.Sorted(maps.Keys(j.Feeds)) {
		v.Feeds = append(v.Feeds, row{Key: p, Value: fmt.Sprintf("%d bytes kept on resume", j.Feeds[p])})
	}
	return v
}

// changes returns the recrawl change counts (docs/recrawl.md), or nil
// when the crawl kept no records.
func changes(st map[string]float64) []row {
	var out []row
	for _, c := range []string{"new", "changed", "unchanged", "gone"} {
		if v, ok := st["recrawl/"+c]; ok {
			out = append(out, row{Key: c, Value: strconv.FormatFloat(v, 'f', -1, 64)})
		}
	}
	if len(out) == 0 {
		return nil
	}
	shareOf(out)
	if v, ok := st["recrawl/not_modified"]; ok {
		out = append(out, row{Key: "of which 304", Value: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return out
}

// prefixed returns the stats under prefix as rows (the rest of the key,
// the count), most first, with bars relative to their sum.
func prefixed(st map[string]float64, prefix string) []row {
	var out []row
	var vals []float64
	for _, k := range slices.Sorted(maps.Keys(st)) {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, row{Key: rest, Value: strconv.FormatFloat(st[k], 'f', -1, 64)})
			vals = append(vals, st[k])
		}
	}
	shareOf(out)
	return out
}

// shareOf sets each row's bar from its value's share of the total.
func shareOf(rows []row) {
	var total float64
	for _, r := range rows {
		v, _ := strconv.ParseFloat(r.Value, 64)
		total += v
	}
	for i := range rows {
		v, _ := strconv.ParseFloat(rows[i].Value, 64)
		if total > 0 {
			rows[i].Share = math.Round(1000*v/total) / 10
		}
	}
}

// FormatStat prints a stats value for people: Unix times (keys ending in
// _time) as UTC dates to the millisecond, whole numbers without a
// fraction, others with up to 4 significant digits.
func FormatStat(key string, v float64) string {
	if strings.HasSuffix(key, "_time") && v > 1e8 {
		return time.UnixMilli(int64(math.Round(v * 1000))).UTC().Format("2006-01-02 15:04:05.000 MST")
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func secs(s float64) string {
	if s == 0 {
		return "0"
	}
	return roundDur(s)
}

func conc(n int) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.Itoa(n)
}

func roundDur(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	default:
		d = d.Round(time.Millisecond)
	}
	return d.String()
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
