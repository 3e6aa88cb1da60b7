package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/internal/redact"
	"github.com/gocrawl/gocrawl/observe/monitor"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// SettingsFlags are the --settings and -s flags shared by the commands
// that load settings.
type SettingsFlags struct {
	file      string
	overrides []string
}

// Add adds --settings and -s to cmd.
func (f *SettingsFlags) Add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "settings", "", "settings `FILE` (default: ./gocrawl.yaml if it exists)")
	cmd.Flags().StringArrayVarP(&f.overrides, "set", "s", nil, "set a setting, `NAME=VALUE` (VALUE is YAML); repeatable")
}

// Load layers the settings for sp (which may be nil), checks them the way
// a crawl would (settings.Validate: throttling scopes, middlewares,
// pipelines, feeds, ...) and turns every problem into one usage error
// listing them all.
func (f *SettingsFlags) Load(a *App, sp spider.Spider) (*settings.Settings, error) {
	s, errs := f.load(a, sp)
	if len(errs) > 0 {
		return nil, SettingsError(errors.Join(errs...))
	}
	return s, nil
}

// load is Load returning the problems one by one, for commands that add
// problems of their own to the list.
func (f *SettingsFlags) load(a *App, sp spider.Spider) (*settings.Settings, []error) {
	opts := settings.LoadOptions{File: f.file, Environ: a.Environ, Overrides: f.overrides}
	if sp != nil {
		opts.SpiderName = sp.Name()
		if p, ok := sp.(spider.SettingsProvider); ok {
			opts.Spider = p.Settings()
		}
	}
	s, err := settings.Load(opts)
	return s, settings.Errors(errors.Join(err, settings.Validate(s)))
}

// LoadStandalone loads and checks settings for a command that is not about
// the project in the working directory (the demo): its gocrawl.yaml is not
// read unless --settings names it.
func (f *SettingsFlags) LoadStandalone(a *App) (*settings.Settings, error) {
	return loadChecked(settings.LoadOptions{File: f.file, NoFile: f.file == "", Environ: a.Environ, Overrides: f.overrides})
}

// loadChecked is settings.Load then settings.Validate, every problem of
// both in one usage error.
func loadChecked(opts settings.LoadOptions) (*settings.Settings, error) {
	s, err := settings.Load(opts)
	if verr := settings.Validate(s); verr != nil {
		err = errors.Join(err, verr)
	}
	if err != nil {
		return nil, SettingsError(err)
	}
	return s, nil
}

// problems turns the usage problems of a command (settings, arguments,
// output files) into one usage error listing them all, or nil.
func problems(errs ...error) error {
	var all []error
	for _, e := range errs {
		if e == nil {
			continue
		}
		var ee *ExitError
		if errors.As(e, &ee) && ee.Code == ExitUsage {
			e = ee.Err
		}
		for _, p := range settings.Errors(e) {
			if p != nil {
				all = append(all, p)
			}
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return UsageError(all[0])
	}
	lines := make([]string, len(all))
	for i, e := range all {
		lines[i] = e.Error()
	}
	return UsageErrorf("%d problems:\n%s", len(all), strings.Join(lines, "\n"))
}

// SettingsError turns the problems of settings.Load into one usage error
// (exit status 2) that lists them one per line.
func SettingsError(err error) error {
	errs := settings.Errors(err)
	if len(errs) == 1 {
		return UsageError(errs[0])
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return UsageErrorf("%d settings problems:\n%s", len(errs), strings.Join(lines, "\n"))
}

// parseArgs turns -a NAME=VALUE flags into a map.
func parseArgs(pairs []string) (map[string]string, error) {
	args := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, UsageErrorf("-a %q: expected NAME=VALUE, e.g. -a start_urls=https://example.com/", p)
		}
		args[k] = v
	}
	return args, nil
}

// ApplyArgs hands spider arguments (-a NAME=VALUE) to sp, which must
// implement spider.ArgsReceiver when args is not empty; problems are usage
// errors naming the spider.
func ApplyArgs(sp spider.Spider, args map[string]string) error {
	if len(args) == 0 {
		if r, ok := sp.(spider.ArgsReceiver); ok {
			if err := r.SetArgs(args); err != nil {
				return UsageErrorf("spider %s: %v", sp.Name(), err)
			}
		}
		return nil
	}
	r, ok := sp.(spider.ArgsReceiver)
	if !ok {
		return UsageErrorf("spider %s takes no arguments (-a); it does not implement spider.ArgsReceiver", sp.Name())
	}
	if err := r.SetArgs(args); err != nil {
		return UsageErrorf("spider %s: %v", sp.Name(), err)
	}
	return nil
}

// CrawlSpec is one crawl: a spider whose arguments are applied, its
// settings and its feed exports.
type CrawlSpec struct {
	Spider   spider.Spider
	Settings *settings.Settings
	Feeds    []*feed.Exporter
	Log      zerolog.Logger
	// Options are passed to the engine; Log and the feeds are added.
	Options engine.Options
	// Monitor, when not nil, validates the items before the feeds and
	// runs its checks every MONITOR_INTERVAL during the crawl; the caller
	// makes the final run (Finish) once everything is flushed.
	Monitor *monitor.Monitor
}

// Crawl runs spec to the end the way `gocrawl run` does (metrics, feeds,
// the end-of-crawl hooks), turning process signals into a graceful stop
// then an abort, and returns the engine's result.
func (a *App) Crawl(ctx context.Context, spec CrawlSpec) (*engine.Result, error) {
	opts := spec.Options
	opts.Log = spec.Log
	opts.Pipelines = append(opts.Pipelines, spec.Monitor.Pipelines()...)
	opts.Pipelines = append(opts.Pipelines, feed.Pipelines(spec.Feeds...)...)
	mon, err := a.startMetrics(spec.Settings, &opts) // see metrics.go
	if err != nil {
		return nil, UsageErrorf("cannot start spider %s: %v", spec.Spider.Name(), err)
	}
	e, err := engine.New(spec.Spider, spec.Settings, opts)
	if err != nil {
		return nil, UsageErrorf("cannot start spider %s: %v", spec.Spider.Name(), err)
	}
	if err := mon.Start(e); err != nil {
		return nil, UsageErrorf("cannot start spider %s: %v", spec.Spider.Name(), err)
	}
	spec.Monitor.Start(ctx, e.Crawler().Stats)
	done := make(chan struct{})
	defer close(done)
	if a.Signals != nil {
		go func() {
			n := 0
			for {
				select {
				case <-done:
					return
				case sig := <-a.Signals:
					n++
					a.interrupted.Store(true)
					if n == 1 {
						spec.Log.Warn().Str("signal", sig.String()).
							Float64("grace_seconds", spec.Settings.Seconds("SHUTDOWN_GRACE").Seconds()).
							Msg("shutting down gracefully: nothing new is sent, in-flight downloads get SHUTDOWN_GRACE, what is not done stays queued (JOBDIR), exports are closed; press Ctrl-C again to abort")
						e.Stop("shutdown")
					} else {
						spec.Log.Warn().Str("signal", sig.String()).Msg("aborting: in-flight requests are cancelled")
						e.Abort()
					}
				}
			}
		}()
	}
	res, err := e.Run(ctx)
	a.finishMetrics(mon, e, spec.Settings, res, spec.Log)
	if err != nil && res == nil {
		return nil, fmt.Errorf("crawl of %s failed: %w", spec.Spider.Name(), err)
	}
	if err != nil {
		spec.Log.Error().Err(err).Str("reason", res.Reason).Msg("the crawl ended on an error")
	}
	return res, err
}

// buildFeeds returns the exporters of the FEEDS setting plus those of -o
// (append) and -O (overwrite) with format from -t or the extension.
//
// With settingsOK false (the settings have problems of their own, already
// reported), FEEDS is skipped and only -o and -O are checked.
func buildFeeds(s *settings.Settings, settingsOK bool, stdout io.Writer, appendTo, overwrite []string, format string) ([]*feed.Exporter, error) {
	if len(appendTo) > 0 && len(overwrite) > 0 {
		return nil, UsageErrorf("use -o FILE (append) or -O FILE (overwrite), not both")
	}
	var exs []*feed.Exporter
	if settingsOK {
		var err error
		if exs, err = feed.FromSettings(s); err != nil {
			return nil, UsageError(err)
		}
	}
	var err error
	var f feed.Format
	if format != "" {
		if f, err = feed.ParseFormat(format); err != nil {
			return nil, UsageErrorf("-t: %v", err)
		}
	}
	add := func(path string, over bool) error {
		o := feed.Options{Format: f, Overwrite: over, Fields: s.Strings("FEED_EXPORT_FIELDS"), Indent: s.Int("FEED_EXPORT_INDENT"), Settings: s}
		flag := "-o"
		if over {
			flag = "-O"
		}
		if feed.IsSink(path) {
			o = feed.SinkDefaults(s)
			o.Overwrite, o.Format = over, f
		}
		if path == "-" {
			if f == "" {
				return UsageErrorf("-o -: name the format of standard output with -t jsonl|json|csv")
			}
			ex, err := feed.NewWriter(stdout, o)
			if err != nil {
				return UsageErrorf("%s -: %v", flag, err)
			}
			exs = append(exs, ex)
			return nil
		}
		ex, err := feed.New(path, o)
		if err != nil {
			return UsageErrorf("%s %s: %v", flag, redact.String(path), err)
		}
		exs = append(exs, ex)
		return nil
	}
	for _, p := range appendTo {
		if err := add(p, false); err != nil {
			return nil, err
		}
	}
	for _, p := range overwrite {
		if err := add(p, true); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, ex := range exs {
		p := ex.Path()
		if p != "<writer>" && !ex.Remote() {
			p = filepath.Clean(p)
		}
		if seen[p] {
			return nil, UsageErrorf("two feed exports write to %s (from -o/-O and FEEDS); give each its own file", ex.Path())
		}
		seen[p] = true
		if err := ex.Check(); err != nil {
			return nil, UsageError(err)
		}
		if p != "<writer>" && !ex.Remote() && !ex.IsSink() {
			if err := probeWritable(p); err != nil {
				return nil, UsageErrorf("feed %s: %v", ex.Path(), err)
			}
		}
	}
	if format != "" && len(appendTo)+len(overwrite) == 0 {
		return nil, UsageErrorf("-t %s needs an output file: -o FILE or -O FILE", format)
	}
	return exs, nil
}

// probeWritable checks, before the first request, that path can be opened
// for writing, by opening it (and its missing directories) the way the
// export will, and removing what did not exist before. Checking
// permission bits is not enough: they do not apply to root, and a
// read-only file system or /proc refuse anyway.
func probeWritable(path string) error {
	var created []string
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		created = append(created, d)
	}
	defer func() {
		for _, d := range created { // deepest first
			os.Remove(d)
		}
	}()
	if len(created) > 0 {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("cannot create its directory: %w", unwrapPath(err))
		}
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write it: %w", unwrapPath(err))
	}
	f.Close()
	if errors.Is(statErr, fs.ErrNotExist) {
		os.Remove(path)
	}
	return nil
}

// unwrapPath drops the *fs.PathError around err, whose path the message
// already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// logDeprecated warns about deprecated settings in use.
func logDeprecated(log zerolog.Logger, s *settings.Settings) {
	for _, msg := range s.Deprecated() {
		log.Warn().Msg(msg)
	}
}

var errCrawlFailed = errors.New("the crawl stopped on an error")
