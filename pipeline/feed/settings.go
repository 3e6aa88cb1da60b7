package feed

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gocrawl/gocrawl/internal/redact"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
)

// FromSettings returns an exporter for every entry of the FEEDS setting
// (file path -> {format, overwrite, fields, indent}; sink URI -> the
// options of SinkOptionsFromSettings), sorted by path.
// fields and indent default to FEED_EXPORT_FIELDS and FEED_EXPORT_INDENT.
// Every problem is reported, naming the feed and the option.
func FromSettings(s *settings.Settings) ([]*Exporter, error) {
	feeds := s.Map("FEEDS")
	var out []*Exporter
	var errs []string
	for _, path := range slices.Sorted(maps.Keys(feeds)) {
		optsFrom := OptionsFromSettings
		if IsSink(path) {
			optsFrom = SinkOptionsFromSettings
		}
		opts, err := optsFrom(s, feeds[path])
		if err != nil {
			errs = append(errs, fmt.Sprintf("FEEDS[%s]: %v", redact.String(path), err))
			continue
		}
		ex, err := New(path, opts)
		if err != nil {
			errs = append(errs, fmt.Sprintf("FEEDS[%s]: %v", redact.String(path), err))
			continue
		}
		out = append(out, ex)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, nil
}

// OptionsFromSettings returns the Options of one FEEDS entry (a mapping
// with optional keys format, overwrite, fields, indent; null for none),
// with FEED_EXPORT_FIELDS and FEED_EXPORT_INDENT as defaults.
func OptionsFromSettings(s *settings.Settings, entry any) (Options, error) {
	opts := Options{Fields: s.Strings("FEED_EXPORT_FIELDS"), Indent: s.Int("FEED_EXPORT_INDENT"), Settings: s}
	if entry == nil {
		return opts, nil
	}
	m, ok := entry.(map[string]any)
	if !ok {
		return opts, fmt.Errorf("expected a mapping like {format: jsonl, overwrite: true}, got %T", entry)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "format":
			str, ok := v.(string)
			if !ok {
				return opts, fmt.Errorf("format must be a string (jsonl, json or csv), got %v", v)
			}
			f, err := ParseFormat(str)
			if err != nil {
				return opts, err
			}
			opts.Format = f
		case "overwrite":
			b, err := settings.Bool.Convert(v)
			if err != nil {
				return opts, fmt.Errorf("overwrite must be true or false, got %v", v)
			}
			opts.Overwrite = b.(bool)
		case "fields":
			l, err := settings.StringList.Convert(v)
			if err != nil {
				return opts, fmt.Errorf("fields must be a list of field names: %v", err)
			}
			opts.Fields = l.([]string)
		case "indent":
			n, err := settings.NonNegative(settings.Int).Convert(v)
			if err != nil {
				return opts, fmt.Errorf("indent must be a non-negative integer: %v", err)
			}
			opts.Indent = n.(int)
		default:
			return opts, fmt.Errorf("unknown option %q; feeds take format, overwrite, fields, indent", k)
		}
	}
	return opts, nil
}

// Pipelines wraps exporters as named pipelines for engine.Options.Pipelines.
func Pipelines(exs ...*Exporter) []pipeline.Named {
	out := make([]pipeline.Named, len(exs))
	for i, ex := range exs {
		out[i] = pipeline.Named{Name: ex.Name(), Stage: ex}
	}
	return out
}
