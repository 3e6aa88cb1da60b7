package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/observe/report"
	"github.com/gocrawl/gocrawl/observe/stats"
)

// summarySection adds lines to the end-of-crawl summary; tw is a tab
// writer whose first column is the label.
type summarySection func(tw io.Writer, res *engine.Result)

// summarySections run after the built-in lines, in order. Other files of
// this package (per-scope metrics, for example) append to it in an init
// function.
var summarySections []summarySection

// WriteSummary prints the end-of-crawl summary: why it ended, requests,
// responses by status, items, errors by kind, bytes, elapsed time and
// rates.
func WriteSummary(w io.Writer, spiderName string, res *engine.Result) {
	st := res.Stats
	get := func(k string) int64 { return int64(st[k]) }
	fmt.Fprintf(w, "\n--- %s: %s after %s ---\n", spiderName, res.Reason, res.Elapsed.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)

	line := func(label, value string) { fmt.Fprintf(tw, "%s\t%s\n", label, value) }
	line("requests", fmt.Sprintf("%d%s", get("downloader/request_count"), breakdown(st, "downloader/request_method_count/")))
	line("responses", fmt.Sprintf("%d%s", get("downloader/response_count"), breakdown(st, "downloader/response_status_count/")))
	items := fmt.Sprintf("%d scraped", get(stats.ItemScrapedCount))
	if n := get(stats.ItemDroppedCount); n > 0 {
		items += fmt.Sprintf(", %d dropped%s", n, breakdown(st, "item_dropped_reasons_count/"))
	}
	line("items", items)
	errs := get("downloader/exception_count") + get("spider_exceptions/count")
	errLine := fmt.Sprintf("%d%s", errs, breakdown(st, "downloader/exception_type_count/"))
	if n := get("spider_exceptions/count"); n > 0 {
		errLine += fmt.Sprintf("  callbacks: %d", n)
	}
	if n := get("start_requests/invalid"); n > 0 {
		errLine += fmt.Sprintf("  invalid start requests: %d", n)
	}
	line("errors", errLine)
	if drops := report.Dropped(st); len(drops) > 0 {
		var total int64
		parts := make([]string, len(drops))
		for i, d := range drops {
			total += d.Count
			parts[i] = fmt.Sprintf("%s: %d", d.Class, d.Count)
		}
		line("dropped", fmt.Sprintf("%d requests  (%s)", total, strings.Join(parts, ", ")))
	}
	line("bytes", humanBytes(st["downloader/response_bytes"]))
	line("elapsed", res.Elapsed.Round(time.Millisecond).String())
	line("rate", fmt.Sprintf("%.1f ok responses/s, %.1f completed/s", st["ok_per_second"], st["completed_per_second"]))
	for _, sec := range summarySections {
		sec(tw, res)
	}
	tw.Flush()
}

// breakdown formats every stat under prefix as "  (key: n, ...)", sorted
// by key, or "" when there is none.
func breakdown(st map[string]float64, prefix string) string {
	var keys []string
	for k := range st {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strings.TrimPrefix(k, prefix) + ": " + strconv.FormatInt(int64(st[k]), 10)
	}
	return "  (" + strings.Join(parts, ", ") + ")"
}

func humanBytes(b float64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", int64(b))
	}
	suffixes := []string{"KiB", "MiB", "GiB", "TiB"}
	v := b / unit
	i := 0
	for v >= unit && i < len(suffixes)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s (%d bytes)", v, suffixes[i], int64(b))
}

// Summary writes the end-of-crawl summary to the log stream: the text of
// WriteSummary in console format, one "crawl summary" record in JSON
// (spider, reason, elapsed, dropped requests by class, every stat, and the
// most requested scopes' measurements), whatever LOG_LEVEL says.
func (l *Logs) Summary(spiderName string, res *engine.Result) {
	if l.Console {
		WriteSummary(l.out, spiderName, res)
		return
	}
	// Log, not Info: STATS_DUMP decides whether the summary is written,
	// not LOG_LEVEL (as in console format).
	ev := l.Log().Str(zerolog.LevelFieldName, zerolog.InfoLevel.String()).Str("spider", spiderName).Str("reason", res.Reason).
		Stringer("elapsed", res.Elapsed.Round(time.Millisecond)).
		Interface("dropped", report.Dropped(res.Stats)).Interface("stats", res.Stats)
	if f, ok := takeFinished(res); ok {
		ev = ev.Interface("scopes", f.snap.Top(f.top))
	}
	ev.Msg("crawl summary")
}
