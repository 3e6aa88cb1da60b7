package metrics

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gocrawl/gocrawl/internal/atomicfile"
)

// Dump is the document STATS_DUMP_FILE receives: the crawl's stats and the
// metrics snapshot.
type Dump struct {
	// Spider is the name of the spider that crawled.
	Spider string `json:"spider,omitempty"`
	// Reason the crawl ended.
	Reason string `json:"reason,omitempty"`
	// Stats is the final stats snapshot (metrics/... keys included).
	Stats map[string]float64 `json:"stats"`
	// Metrics holds the global and per-scope measurements.
	Metrics Snapshot `json:"metrics"`
	// Series is the crawl over time (the busiest scopes), for plots; nil
	// in dumps written before it existed.
	Series *Series `json:"series,omitempty"`
	// Limits are the throttling limits of every scope in Metrics, as of
	// the end of the crawl, keyed by scope.
	Limits map[string]ScopeLimits `json:"limits,omitempty"`
}

// ScopeLimits are a scope's configured and current throttling limits,
// for reports.
type ScopeLimits struct {
	ConfiguredDelay       float64 `json:"configured_delay_seconds"`
	ConfiguredConcurrency int     `json:"configured_concurrency"`
	Delay                 float64 `json:"delay_seconds"`
	Concurrency           int     `json:"concurrency"`
	BackoffLevel          int     `json:"backoff_level,omitempty"`
}

// ScopesCSVPath returns where WriteDump puts the per-scope CSV for a JSON
// path: "stats.json" -> "stats.scopes.csv".
func ScopesCSVPath(jsonPath string) string {
	return strings.TrimSuffix(jsonPath, filepath.Ext(jsonPath)) + ".scopes.csv"
}

// WriteDump writes d as indented JSON to path and every scope of d.Metrics
// as CSV to ScopesCSVPath(path), for plotting, creating path's directory if
// needed. Each file is written to a temporary name first and renamed, so a
// reader never sees half a file.
func WriteDump(path string, d Dump) error {
	if path == "" {
		return fmt.Errorf("STATS_DUMP_FILE: empty path")
	}
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("STATS_DUMP_FILE: encoding stats: %w", err)
	}
	if err := writeAtomic(path, func(f *os.File) error {
		_, err := f.Write(append(js, '\n'))
		return err
	}); err != nil {
		return err
	}
	return writeAtomic(ScopesCSVPath(path), func(f *os.File) error { return WriteScopesCSV(f, d.Metrics) })
}

// WriteScopesCSV writes one header line and one line per scope of s: the
// scope name, then the columns of the "metrics/scope/..." stats keys,
// delay_seconds and backoff_level.
func WriteScopesCSV(out io.Writer, s Snapshot) error {
	w := csv.NewWriter(out)
	head := []string{"scope"}
	for _, fl := range fields {
		head = append(head, fl.name)
	}
	head = append(head, "cancelled", "delay_seconds", "backoff_level")
	if err := w.Write(head); err != nil {
		return err
	}
	for i := range s.Scopes {
		sc := &s.Scopes[i]
		row := []string{sc.Scope}
		for _, fl := range fields {
			row = append(row, strconv.FormatFloat(fl.get(sc), 'g', -1, 64))
		}
		row = append(row, strconv.FormatInt(sc.Cancelled, 10),
			strconv.FormatFloat(sc.Delay.Seconds(), 'g', -1, 64), strconv.Itoa(sc.BackoffLevel))
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// writeAtomic replaces path with what fill writes (package atomicfile),
// its errors named after STATS_DUMP_FILE.
func writeAtomic(path string, fill func(*os.File) error) error {
	if err := atomicfile.Write(path, 0o600, fill); err != nil {
		return fmt.Errorf("STATS_DUMP_FILE: writing %s: %w", path, err)
	}
	return nil
}
