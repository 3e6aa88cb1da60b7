package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/engine"
)

func init() { addCommand(runCommand) }

func runCommand(a *App) *cobra.Command {
	var (
		sf        SettingsFlags
		args      []string
		appendTo  []string
		overwrite []string
		format    string
		fresh     bool
	)
	cmd := &cobra.Command{
		Use:   "run SPIDER",
		Short: "Run a spider",
		Long: `Run a spider until it has nothing left to crawl.

Spider arguments (-a NAME=VALUE) go to the spider; settings (-s NAME=VALUE)
override the settings file, the spider's settings and GOCRAWL_ variables.
Items are written to -o FILE (appended) or -O FILE (overwritten) as they
arrive, in the format of the file's extension (.jsonl, .json, .csv) or -t.

The first Ctrl-C stops scheduling and lets in-flight requests finish; a
second one aborts them. With -s JOBDIR=DIR the crawl's state is kept in DIR:
run the same command again to resume it, or add --fresh to start over.

With -s REDIS_URL=redis://host:6379/0 the process joins a distributed job
(named by -s JOB=name, by default the spider's) kept in Redis: run the same
command on several machines and they share one frontier, one dupefilter and
the throttling state of every scope. The first worker seeds the start
requests; every worker exits 0 when the job is finished. See
docs/distributed.md.`,
		Example: `  gocrawl run follow -a start_urls=https://example.com/ -a max_depth=2 -O pages.jsonl
  gocrawl run quotes -s DOWNLOAD_DELAY=0.5 -o quotes.csv
  gocrawl run follow -a start_urls=https://example.com/ -s REDIS_URL=redis://10.0.0.5:6379/0 -s JOB=example -o pages-$(hostname).jsonl`,
		Args: ExactArgs(1, "one spider name"),
		RunE: func(cmd *cobra.Command, pos []string) error {
			sp, err := a.Spider(pos[0])
			if err != nil {
				return err
			}
			// Every problem of the command line, the spider's arguments,
			// the settings and the output files is reported at once.
			spArgs, argErr := parseArgs(args)
			if argErr == nil {
				argErr = ApplyArgs(sp, spArgs)
			}
			s, setErrs := sf.load(a, sp)
			feeds, feedErr := buildFeeds(s, len(setErrs) == 0, a.Stdout, appendTo, overwrite, format)
			var dumpErr error
			if path := s.String("STATS_DUMP_FILE"); path != "" {
				if err := probeWritable(path); err != nil {
					dumpErr = UsageErrorf("STATS_DUMP_FILE %s: %v", path, err)
				}
			}
			monFileErr := checkMonitorFile(s)
			if err := problems(append([]error{argErr, feedErr, dumpErr, monFileErr}, setErrs...)...); err != nil {
				return err
			}
			logs, err := OpenLogs(s, a.Stderr)
			if err != nil {
				return err
			}
			defer logs.Close()
			log := logs.Logger
			logDeprecated(log, s)
			if err := checkJobSettings(s); err != nil {
				return err
			}
			job, err := openJob(s, sp, fresh, feeds, log) // JOBDIR; see jobs.go
			if err != nil {
				return err
			}
			var opts engine.Options
			if job != nil { // a nil *jobdir.Job in the interface would not be a nil Job
				opts.Job = job
			}
			shared, err := openShared(cmd.Context(), s, sp, log) // REDIS_URL; see distributed.go
			if err != nil {
				return err
			}
			if shared != nil {
				opts.Shared = shared
			}
			mon, err := newMonitor(s, sp, opts, log) // MONITOR_*; see monitor.go
			if err != nil {
				return err
			}
			res, err := a.Crawl(cmd.Context(), CrawlSpec{Spider: sp, Settings: s, Feeds: feeds, Log: log, Options: opts, Monitor: mon})
			if err != nil && res != nil { // the crawl ran and ended abnormally
				err = fmt.Errorf("%w: %w", errCrawlFailed, err)
			}
			if jerr := closeJob(job, feeds); jerr != nil && err == nil {
				err = jerr
			}
			if shared != nil {
				if serr := shared.Close(); serr != nil && err == nil {
					err = serr
				}
			}
			if res == nil {
				return err
			}
			if s.Bool("STATS_DUMP") {
				logs.Summary(sp.Name(), res)
			}
			// Last, once the items and the job are flushed: a failed
			// monitor exits 3.
			return finishMonitor(cmd.Context(), mon, res, err)
		},
	}
	sf.Add(cmd)
	f := cmd.Flags()
	f.StringArrayVarP(&args, "arg", "a", nil, "spider argument `NAME=VALUE`; repeatable")
	f.StringArrayVarP(&appendTo, "output", "o", nil, "append items to `FILE` (.jsonl, .json, .csv; - for stdout with -t)")
	f.StringArrayVarP(&overwrite, "overwrite-output", "O", nil, "write items to `FILE`, replacing it")
	f.StringVarP(&format, "format", "t", "", "export `FORMAT` (jsonl, json, csv) when the extension does not say")
	f.BoolVar(&fresh, "fresh", false, "start the JOBDIR job over, deleting its saved state (same as -s JOBDIR_RESET=true)")
	return cmd
}
