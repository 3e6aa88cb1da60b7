// Package feed writes scraped items to files as they arrive: JSON Lines
// (.jsonl), a JSON array (.json) and CSV (.csv).
//
// An Exporter is an item pipeline (pipeline.Stage with Open and
// Close), so a crawl passes it in engine.Options.Pipelines and every item
// that survives the other pipelines is written. `gocrawl run -o FILE`
// appends, -O overwrites; the FEEDS setting configures exports in
// gocrawl.yaml:
//
//	FEEDS:
//	  items.jsonl: {format: jsonl}
//	  items.csv: {format: csv, overwrite: true, fields: [url, title]}
//
// Items are structs (fields named by their json tags), pointers to structs,
// or maps with string keys (written sorted by key). An item that cannot be
// encoded (nil, a func or channel inside) is dropped with an error of kind
// ErrItem; the crawl goes on.
//
// Writes are buffered and flushed at least every second and on Close, so a
// crawl interrupted gracefully leaves a complete file: a .json file is a
// valid JSON array once Close has run.
//
// A target that is a URI whose scheme a sink package registered
// (RegisterSink; postgresql:// by pipeline/feed/pgsink, sqlite:// by
// pipeline/feed/sqlitesink) stores items in a database table instead: New
// returns an Exporter that batches items, keeps them in a bounded buffer
// and retries while the database is away (see Sink and docs/exports.md).
package feed

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Format is an export format.
type Format string

// The formats.
const (
	// JSONLines writes one JSON object per line (.jsonl). It streams,
	// appends cleanly and survives a crash with at most a partial last
	// line: the best format for long crawls.
	JSONLines Format = "jsonl"
	// JSON writes one JSON array ([...]); it is valid once the exporter is
	// closed.
	JSON Format = "json"
	// CSV writes a header row and one row per item; nested values are
	// written as JSON.
	CSV Format = "csv"
)

// Formats lists the supported formats.
var Formats = []Format{JSONLines, JSON, CSV}

// ErrFormat is the kind of error for an unknown or missing format.
var ErrFormat = errors.New("unknown feed format")

// ParseFormat returns the format named s: jsonl (or jsonlines, jl), json
// or csv, in any case.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "jsonl", "jsonlines", "jl", "ndjson":
		return JSONLines, nil
	case "json":
		return JSON, nil
	case "csv":
		return CSV, nil
	}
	return "", fmt.Errorf("%w %q: use one of jsonl, json, csv", ErrFormat, s)
}

// FormatFromPath returns the format that path's extension names (.jsonl,
// .jl, .ndjson, .json, .csv).
func FormatFromPath(path string) (Format, error) {
	ext := strings.TrimPrefix(filepath.Ext(path), ".")
	if ext == "" {
		return "", fmt.Errorf("%w: %q has no extension; name the format with -t jsonl|json|csv or use a .jsonl, .json or .csv file", ErrFormat, path)
	}
	f, err := ParseFormat(ext)
	if err != nil {
		return "", fmt.Errorf("%w: cannot tell the format of %q from its extension; name it with -t jsonl|json|csv", ErrFormat, path)
	}
	return f, nil
}
