package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/observe/report"
	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

func init() { addCommand(jobsCommand) }

// openJob opens the JOBDIR of a crawl, or returns nil when JOBDIR is
// empty. A job that cannot be used (another spider's, another version's,
// corrupted, in use) is a usage error: exit status 2, nothing started.
// Feeds written by an earlier run of the job are set to continue where the
// job's last acknowledged request left them.
func openJob(s *settings.Settings, sp spider.Spider, fresh bool, feeds []*feed.Exporter, log zerolog.Logger) (*jobdir.Job, error) {
	dir := s.String("JOBDIR")
	if dir == "" {
		if fresh {
			return nil, UsageErrorf("--fresh needs a job directory: set JOBDIR (-s JOBDIR=DIR)")
		}
		return nil, nil
	}
	j, err := jobdir.Open(dir, sp.Name(), jobdir.Options{Reset: fresh || s.Bool("JOBDIR_RESET"), Log: log,
		SyncDelay: s.Seconds("JOBDIR_SYNC_DELAY")})
	if errors.Is(err, jobdir.ErrWrite) {
		return nil, err // a full disk: exit status 1, resume once it is fixed
	}
	if err != nil {
		return nil, UsageError(err)
	}
	if j.Resumed() {
		log.Info().Str("jobdir", dir).Time("created", j.Metadata().Created).Msg("resuming job")
	}
	var fs []jobdir.Feed
	for _, ex := range feeds {
		if ex.Path() == "" || ex.Path() == "-" {
			continue // stdout: nothing to resume
		}
		fs = append(fs, ex)
		if !j.Resumed() {
			continue
		}
		resumeOffset := j.ResumeOffset
		if ex.Remote() {
			// Object storage keeps its own record of what it holds
			// (pipeline/feed/s3feed); the job's offset is used as saved.
			resumeOffset = j.FeedOffset
		}
		off, ok, err := resumeOffset(ex.Path())
		if err != nil {
			j.Close()
			return nil, UsageError(fmt.Errorf("JOBDIR %s: feed %s: %w", dir, ex.Path(), err))
		}
		if ok {
			ex.ResumeAt(off)
		}
	}
	j.SetFeeds(fs...)
	return j, nil
}

// closeJob records the feeds' final offsets and closes the job.
func closeJob(j *jobdir.Job, feeds []*feed.Exporter) error {
	if j == nil {
		return nil
	}
	for _, ex := range feeds {
		if ex.Path() != "" && ex.Path() != "-" {
			if err := j.SaveFeedOffset(ex.Path(), ex.Offset()); err != nil {
				j.Close()
				return err
			}
		}
	}
	return j.Close()
}

func jobsCommand(a *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Look into job directories (JOBDIR) and distributed jobs (REDIS_URL)",
		Long: `A job directory (-s JOBDIR=DIR) keeps a crawl's queue, dupefilter,
throttling state, stats and feed positions, so that the crawl can be paused
with Ctrl-C and resumed by running the same command again.

A distributed job (-s REDIS_URL=URL -s JOB=NAME) keeps the same in Redis,
shared by every worker that joins it; --redis URL names the Redis and the
argument is then the job's name.`,
	}
	cmd.AddCommand(jobsInspectCommand(a), jobsDeleteCommand(a))
	return cmd
}

func jobsDeleteCommand(a *App) *cobra.Command {
	var url, prefix string
	var force bool
	cmd := &cobra.Command{
		Use:   "delete --redis URL JOB",
		Short: "Remove every key of a distributed job from Redis",
		Long: `Remove every key of a distributed job (its frontier, dupefilter, throttling
state, stats and workers) from Redis, on every master of a Redis Cluster. It
refuses while workers of the job are alive, unless --force. A job directory
is deleted with rm -r, or started over with gocrawl run --fresh.`,
		Example: `  gocrawl jobs delete --redis redis://10.0.0.5:6379/0 quotes`,
		Args:    ExactArgs(1, "one job name"),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if url == "" {
				return UsageErrorf("jobs delete needs --redis URL (a job directory is deleted with rm -r)")
			}
			return deleteRedisJob(cmd.Context(), a.Stdout, url, prefix, pos[0], force)
		},
	}
	cmd.Flags().StringVar(&url, "redis", "", "the Redis `URL` holding the job")
	cmd.Flags().StringVar(&prefix, "prefix", "gocrawl", "the job's key `PREFIX` (REDIS_KEY_PREFIX)")
	cmd.Flags().BoolVar(&force, "force", false, "delete even if workers of the job are alive")
	return cmd
}

func jobsInspectCommand(a *App) *cobra.Command {
	var top int
	var url, prefix string
	cmd := &cobra.Command{
		Use:   "inspect JOBDIR | inspect --redis URL JOB",
		Short: "Print what a job holds: queued requests per scope, scopes in backoff, workers, stats",
		Example: `  gocrawl jobs inspect crawls/run1
  gocrawl jobs inspect crawls/run1 --top 0   # every scope
  gocrawl jobs inspect --redis redis://10.0.0.5:6379/0 quotes`,
		Args: ExactArgs(1, "one job directory, or with --redis one job name"),
		RunE: func(cmd *cobra.Command, pos []string) error {
			if url != "" {
				return inspectRedisJob(cmd.Context(), a.Stdout, url, prefix, pos[0], top)
			}
			j, err := jobdir.Open(pos[0], "", jobdir.Options{ReadOnly: true})
			if err != nil {
				return UsageError(err)
			}
			defer j.Close()
			return inspectJob(cmd.Context(), a.Stdout, j, top)
		},
	}
	cmd.Flags().IntVar(&top, "top", 20, "show the `N` scopes with most queued requests (0 = all)")
	cmd.Flags().StringVar(&url, "redis", "", "inspect the distributed job named by the argument in the Redis at `URL`")
	cmd.Flags().StringVar(&prefix, "prefix", "gocrawl", "the distributed job's key `PREFIX` (REDIS_KEY_PREFIX)")
	return cmd
}

func inspectJob(ctx context.Context, w io.Writer, j *jobdir.Job, top int) error {
	m := j.Metadata()
	fmt.Fprintf(w, "Job %s\n  spider:  %s\n  created: %s\n  format:  %d\n", j.Dir(), m.Spider, m.Created.Format(time.RFC3339), m.Version)
	if mark, ok, err := j.LastSync(); err == nil && ok {
		fmt.Fprintf(w, "  synced:  %s (sync %d)\n", mark.Time.Format(time.RFC3339), mark.Count)
	}
	recs, err := j.Recoveries()
	if err != nil {
		return err
	}
	for _, r := range recs {
		fmt.Fprintf(w, "  DAMAGE found %s: %s\n", r.Detected.Format(time.RFC3339), r)
	}
	fmt.Fprintln(w)

	counts, delayed, err := jobdir.QueueCounts(j)
	if err != nil {
		return err
	}
	total := delayed
	for _, n := range counts {
		total += n
	}
	fmt.Fprintf(w, "Queued requests: %d (%d delayed by throttling_delay)\n", total, delayed)
	names := slices.SortedFunc(maps.Keys(counts), func(x, y string) int {
		if counts[x] != counts[y] {
			return counts[y] - counts[x]
		}
		return strings.Compare(x, y)
	})
	if top > 0 && len(names) > top {
		names = names[:top]
	}
	if len(names) > 0 {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  queued\tscopes\t")
		for _, n := range names {
			fmt.Fprintf(tw, "  %d\t%s\t\n", counts[n], strings.ReplaceAll(n, "\x00", " + "))
		}
		tw.Flush()
		if len(counts) > len(names) {
			fmt.Fprintf(w, "  ... and %d more scope sets (--top 0 shows all)\n", len(counts)-len(names))
		}
	}
	fmt.Fprintln(w)

	var snaps []throttling.ScopeSnapshot
	if _, err := j.LoadThrottling(&snaps); err != nil {
		return err
	}
	now := time.Now()
	var backoff []throttling.ScopeSnapshot
	for _, s := range snaps {
		if s.BackoffLevel > 0 || s.BlockedUntil.After(now) {
			backoff = append(backoff, s)
		}
	}
	fmt.Fprintf(w, "Scopes in backoff: %d of %d saved\n", len(backoff), len(snaps))
	if len(backoff) > 0 {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  scope\tdelay\tlevel\tblocked until\tconcurrency")
		for _, s := range backoff {
			until := "-"
			if s.BlockedUntil.After(now) {
				until = s.BlockedUntil.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "  %s\t%.3gs\t%d\t%s\t%d\n", s.Scope, s.Delay, s.BackoffLevel, until, s.Concurrency)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)

	st, err := j.LoadStats()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Stats so far: %d\n", len(st))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, k := range slices.Sorted(maps.Keys(st)) {
		fmt.Fprintf(tw, "  %s\t%s\n", k, report.FormatStat(k, st[k]))
	}
	tw.Flush()
	offs, err := j.FeedOffsets()
	if err != nil {
		return err
	}
	if len(offs) > 0 {
		fmt.Fprintln(w, "\nFeeds:")
		for _, p := range slices.Sorted(maps.Keys(offs)) {
			fmt.Fprintf(w, "  %s: %d bytes kept on resume\n", p, offs[p])
		}
	}
	return nil
}
