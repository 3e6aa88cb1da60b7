package cli

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/observe/monitor"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// ExitMonitor is the exit status of a crawl that ran to its end but whose
// monitors failed (MONITOR_* settings, a spider's monitor.Provider): the
// items or stats are not what they should be. See docs/monitors.md.
const ExitMonitor = 3

// checkMonitorFile reports, before the first request, a MONITOR_RESULTS_FILE
// that cannot be written.
func checkMonitorFile(s *settings.Settings) error {
	path := s.String("MONITOR_RESULTS_FILE")
	if path == "" {
		return nil
	}
	if err := probeWritable(path); err != nil {
		return UsageErrorf("MONITOR_RESULTS_FILE %s: %v", path, err)
	}
	return nil
}

// newMonitor builds the crawl's monitors from the settings and the
// spider's own (monitor.Provider); nil when none is configured.
func newMonitor(s *settings.Settings, sp spider.Spider, opts engine.Options, log zerolog.Logger) (*monitor.Monitor, error) {
	var extra []monitor.Check
	if p, ok := sp.(monitor.Provider); ok {
		extra = p.Monitors()
	}
	m, err := monitor.FromSettings(s, extra, log, opts.Clock, sp.Name())
	if err != nil {
		return nil, SettingsError(err)
	}
	return m, nil
}

// finishMonitor makes the final run of the monitors on the crawl's result
// and turns a failure into exit status 3, unless err (the crawl's own
// error) already sets the status.
func finishMonitor(ctx context.Context, m *monitor.Monitor, res *engine.Result, err error) error {
	if res == nil {
		m.Stop()
		return err
	}
	r := m.Finish(context.WithoutCancel(ctx), res.Reason, res.Stats, res.Elapsed)
	if !r.OK && err == nil {
		return &ExitError{Code: ExitMonitor, Err: r.Err()}
	}
	return err
}
