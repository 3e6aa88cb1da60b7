package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/persist/redisjob"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
)

// dialRedis connects for the jobs commands; an unreachable server is a
// usage error naming the address.
func dialRedis(ctx context.Context, url string) (redis.UniversalClient, error) {
	c, err := redisq.Dial(ctx, url, redisq.DialOptions{})
	if err != nil {
		return nil, UsageErrorf("--redis: %v", err)
	}
	return c, nil
}

func inspectRedisJob(ctx context.Context, w io.Writer, url, prefix, job string, top int) error {
	c, err := dialRedis(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := redisjob.Inspect(ctx, c, prefix, job, top)
	if errors.Is(err, redisjob.ErrNoJob) || errors.Is(err, redisq.ErrBadName) {
		return UsageError(err)
	}
	if err != nil {
		return err
	}
	writeRedisReport(w, url, r, top)
	return nil
}

func writeRedisReport(w io.Writer, url string, r *redisjob.Report, top int) {
	m := r.Meta
	seed := r.Seed
	if seed == "" {
		seed = "not started"
	}
	fmt.Fprintf(w, "Job %s at %s\n  spider:     %s\n  created:    %s\n  shards:     %d\n  dupefilter: %s\n  seeding:    %s\n\n",
		r.Job, redisq.Addr(url), m.Spider, m.Created.Format(time.RFC3339), m.Shards, m.Dupefilter, seed)
	c := r.Counts
	fmt.Fprintf(w, "Frontier: %d queued, %d delayed (throttling_delay), %d in flight; %d fingerprints; %d requests put back after a lease expired\n",
		c.Waiting, c.Delayed, c.Reserved, r.Seen, r.Reclaims)
	if len(r.Queues) > 0 {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  queued\tscopes\tstate")
		for _, q := range r.Queues {
			fmt.Fprintf(tw, "  %d\t%s\t%s\n", q.Queued, q.Scopes, q.Where)
		}
		tw.Flush()
		if r.NQueues > len(r.Queues) {
			fmt.Fprintf(w, "  ... and %d more scope sets (--top 0 shows all)\n", r.NQueues-len(r.Queues))
		}
	}
	fmt.Fprintf(w, "\nLive workers: %d\n", len(r.Workers))
	if len(r.Workers) > 0 {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  worker\thost\tpid\tstarted\tin flight\theartbeat expires")
		for _, wk := range r.Workers {
			started, exp := "-", "-"
			if !wk.Started.IsZero() {
				started = wk.Started.Format(time.RFC3339)
			}
			if !wk.Expires.IsZero() {
				exp = wk.Expires.Format("15:04:05")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%d\t%s\n", wk.ID, wk.Host, wk.PID, started, wk.InFlight, exp)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nScopes (backing off first, then the busiest):\n")
	if len(r.Scopes) > 0 {
		now := time.Now()
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  scope\tdelay\tconcurrency\tin flight\tbackoff level\tRetry-After pace\trate (estimated limit)\tblocked until")
		for _, s := range r.Scopes {
			until, pace, rate := "-", "-", "-"
			if s.BlockedUntil.After(now) {
				until = s.BlockedUntil.Format(time.RFC3339)
			}
			if s.Pace > 0 {
				pace = fmt.Sprintf("%.3gs", s.Pace.Seconds())
			}
			if s.Rate > 0 {
				rate = fmt.Sprintf("%.3g/s (%.3g/s)", s.Rate, s.RateEstimate)
			}
			fmt.Fprintf(tw, "  %s\t%.3gs\t%d\t%d\t%d\t%s\t%s\t%s\n", s.Scope, s.Delay.Seconds(), s.Concurrency, s.Active, s.Level, pace, rate, until)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nTotals over every worker: %d counters\n", len(r.Totals))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, k := range slices.Sorted(maps.Keys(r.Totals)) {
		fmt.Fprintf(tw, "  %s\t%v\n", k, r.Totals[k])
	}
	tw.Flush()
}

func deleteRedisJob(ctx context.Context, w io.Writer, url, prefix, job string, force bool) error {
	c, err := dialRedis(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()
	n, err := redisjob.Delete(ctx, c, prefix, job, force)
	if err != nil {
		if errors.Is(err, redisjob.ErrNoJob) || errors.Is(err, redisq.ErrBadName) || errors.Is(err, redisjob.ErrLiveWorkers) {
			return UsageError(err)
		}
		return err
	}
	fmt.Fprintf(w, "deleted job %s: %d keys\n", job, n)
	return nil
}
