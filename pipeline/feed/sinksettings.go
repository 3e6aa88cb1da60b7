package feed

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/settings"
)

// sinkParams are the FEEDS options of a sink entry that are passed to the
// sink in its URI's query.
var sinkParams = []string{"table", "key", "extra"}

// SinkOptionsFromSettings returns the Options of one FEEDS entry whose key
// is a sink URI: a mapping with optional keys fields, batch_items,
// buffer_items, retry_timeout (seconds) and the sink's own table, key
// (a field name or a list) and extra, which are added to the URI's query.
// FEED_EXPORT_FIELDS, FEED_BATCH_ITEMS, FEED_BUFFER_ITEMS,
// FEED_FLUSH_INTERVAL and FEED_RETRY_TIMEOUT are the defaults.
func SinkOptionsFromSettings(s *settings.Settings, entry any) (Options, error) {
	opts := SinkDefaults(s)
	if entry == nil {
		return opts, nil
	}
	m, ok := entry.(map[string]any)
	if !ok {
		return opts, fmt.Errorf("expected a mapping like {table: items, key: url}, got %T", entry)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "fields":
			l, err := settings.StringList.Convert(v)
			if err != nil {
				return opts, fmt.Errorf("fields must be a list of field names: %v", err)
			}
			opts.Fields = l.([]string)
		case "batch_items", "buffer_items":
			n, err := settings.NonNegative(settings.Int).Convert(v)
			if err != nil {
				return opts, fmt.Errorf("%s must be a non-negative integer: %v", k, err)
			}
			if k == "batch_items" {
				opts.BatchItems = n.(int)
			} else {
				opts.BufferItems = n.(int)
			}
		case "retry_timeout":
			f, err := settings.NonNegative(settings.Float).Convert(v)
			if err != nil {
				return opts, fmt.Errorf("retry_timeout must be a non-negative number of seconds: %v", err)
			}
			opts.RetryTimeout = time.Duration(f.(float64) * float64(time.Second))
		case "table", "extra":
			str, ok := v.(string)
			if !ok || str == "" {
				return opts, fmt.Errorf("%s must be a name, got %v", k, v)
			}
			opts.SinkParams[k] = str
		case "key":
			l, err := settings.StringList.Convert(v)
			if err != nil || len(l.([]string)) == 0 {
				return opts, fmt.Errorf("key must be a field name or a list of them, got %v", v)
			}
			opts.SinkParams[k] = strings.Join(l.([]string), ",")
		case "format", "overwrite", "indent":
			return opts, fmt.Errorf("%s does not apply to a sink: it stores items in a table, not a file", k)
		default:
			return opts, fmt.Errorf("unknown option %q; sinks take fields, %s, batch_items, buffer_items, retry_timeout", k, strings.Join(sinkParams, ", "))
		}
	}
	return opts, nil
}

// SinkDefaults returns the Options of a sink from the settings
// FEED_EXPORT_FIELDS, FEED_BATCH_ITEMS, FEED_BUFFER_ITEMS,
// FEED_FLUSH_INTERVAL and FEED_RETRY_TIMEOUT.
func SinkDefaults(s *settings.Settings) Options {
	return Options{
		Fields:        s.Strings("FEED_EXPORT_FIELDS"),
		BatchItems:    s.Int("FEED_BATCH_ITEMS"),
		BufferItems:   s.Int("FEED_BUFFER_ITEMS"),
		FlushInterval: s.Seconds("FEED_FLUSH_INTERVAL"),
		RetryTimeout:  s.Seconds("FEED_RETRY_TIMEOUT"),
		SinkParams:    map[string]string{},
	}
}
