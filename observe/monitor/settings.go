package monitor

import (
	"errors"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
)

// Provider is implemented by spiders that bring monitors of their own;
// they run with those of the settings, in `gocrawl run` and in every
// cli.Main program:
//
//	func (s *Spider) Monitors() []monitor.Check {
//		return []monitor.Check{monitor.NewCheck("prices", s.checkPrices)}
//	}
type Provider interface {
	Monitors() []Check
}

func init() {
	settings.RegisterCheck("monitor", func(s *settings.Settings) error {
		_, err := checksFromSettings(s)
		return err
	})
}

// FromSettings builds the Monitor the MONITOR_* settings describe, with
// extra checks (a spider's own, see Provider) after those of the settings.
// It returns nil when no monitor is configured or MONITOR_ENABLED is
// false. A schema file that cannot be read or compiled is an error naming
// MONITOR_ITEM_SCHEMA. The results file defaults to <JOBDIR>/monitors.json
// when JOBDIR is set.
func FromSettings(s *settings.Settings, extra []Check, log zerolog.Logger, clk clock.Clock, spiderName string) (*Monitor, error) {
	if !s.Bool("MONITOR_ENABLED") {
		return nil, nil
	}
	opts, err := checksFromSettings(s)
	if err != nil {
		return nil, err
	}
	opts.Checks = append(opts.Checks, extra...)
	if len(opts.Checks) == 0 && opts.Items == nil {
		return nil, nil
	}
	opts.Interval = settings.Duration(s.Float("MONITOR_INTERVAL"))
	opts.ResultsFile = ResultsFile(s)
	opts.WebhookURL = s.String("MONITOR_WEBHOOK_URL")
	opts.WebhookTimeout = settings.Duration(s.Float("MONITOR_WEBHOOK_TIMEOUT"))
	opts.Log, opts.Clock, opts.Spider = log, clk, spiderName
	return New(opts), nil
}

// ResultsFile returns MONITOR_RESULTS_FILE, or <JOBDIR>/monitors.json when
// it is empty and JOBDIR is set, or "".
func ResultsFile(s *settings.Settings) string {
	if p := s.String("MONITOR_RESULTS_FILE"); p != "" {
		return p
	}
	if dir := s.String("JOBDIR"); dir != "" {
		return filepath.Join(dir, "monitors.json")
	}
	return ""
}

// checksFromSettings returns the checks the settings configure, every
// problem naming its setting.
func checksFromSettings(s *settings.Settings) (Options, error) {
	var opts Options
	var errs []error
	minSample := s.Int("MONITOR_MIN_SAMPLE")
	var validators []Validator
	if path := s.String("MONITOR_ITEM_SCHEMA"); path != "" {
		sch, err := LoadSchema(path)
		if err != nil {
			errs = append(errs, settings.InvalidErr(s, "MONITOR_ITEM_SCHEMA", err))
		} else {
			validators = append(validators, sch)
		}
	}
	if s.Bool("MONITOR_ITEM_STRUCT") {
		validators = append(validators, StructTags{})
	}
	if len(validators) > 0 {
		opts.Items = NewItems(s.Int("MONITOR_MAX_INVALID_ITEMS"), s.Bool("MONITOR_DROP_INVALID_ITEMS"), validators...)
	}
	if n := s.Int("MONITOR_MIN_ITEMS"); n > 0 {
		opts.Checks = append(opts.Checks, MinItems{Min: n})
	}
	for _, sh := range []struct {
		name  string
		build func(float64, int) MaxShare
	}{
		{"MONITOR_MAX_ERROR_SHARE", MaxErrorShare},
		{"MONITOR_MAX_429_SHARE", Max429Share},
		{"MONITOR_MAX_DROP_SHARE", MaxDropShare},
	} {
		if max := s.Float(sh.name); max < 1 {
			opts.Checks = append(opts.Checks, sh.build(max, minSample))
		}
	}
	if secs := s.Float("MONITOR_MAX_DURATION"); secs > 0 {
		opts.Checks = append(opts.Checks, MaxDuration{Max: settings.Duration(secs)})
	}
	return opts, errors.Join(errs...)
}
