package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/service"
	"github.com/gocrawl/gocrawl/settings"
)

func init() { addCommand(serveCommand) }

func serveCommand(a *App) *cobra.Command {
	var (
		sf      SettingsFlags
		addr    string
		dir     string
		maxJobs int
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the crawl service: a job API, schedules and a web page",
		Long: `Serve an HTTP API and a web page to start, watch and cancel crawls of this
program's spiders, and run them on cron schedules. Each job runs as its own
process (this program's run command) with its own JOBDIR under SERVE_DIR;
SERVE_MAX_JOBS run at once, the others wait in a queue. The history of
jobs and the schedules are kept in SERVE_DIR/jobs.db (SQLite).

The service listens on loopback (127.0.0.1:6800) by default. Another
address needs SERVE_TOKEN (set GOCRAWL_SERVE_TOKEN): every API call then
carries "Authorization: Bearer TOKEN", and the page is opened once as
http://HOST:PORT/?token=TOKEN.

The first Ctrl-C stops the jobs gracefully and the service; the jobs stay
"running" in the database and the next serve in the same SERVE_DIR resumes
them (SERVE_RECOVER=resume) or marks them failed (SERVE_RECOVER=fail).
See docs/service.md.`,
		Example: `  gocrawl serve
  GOCRAWL_SERVE_TOKEN=$(openssl rand -hex 16) gocrawl serve --addr 0.0.0.0:6800 --dir /var/lib/gocrawl
  curl -X POST localhost:6800/api/jobs -H 'Content-Type: application/json' \
    -d '{"spider": "follow", "args": {"start_urls": "https://example.com/"}}'`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := sf.Load(a, nil)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("addr") {
				addr = s.String("SERVE_ADDR")
			}
			if !cmd.Flags().Changed("dir") {
				dir = s.String("SERVE_DIR")
			}
			if !cmd.Flags().Changed("max-jobs") {
				maxJobs = s.Int("SERVE_MAX_JOBS")
			}
			if maxJobs < 0 {
				return UsageErrorf("--max-jobs %d: want a positive number (0 = 2)", maxJobs)
			}
			token := s.String("SERVE_TOKEN")
			if !service.IsLoopback(addr) && token == "" {
				return UsageErrorf("serve --addr %s listens beyond loopback: set a token (GOCRAWL_SERVE_TOKEN) so that only its holders can start crawls, or listen on 127.0.0.1", addr)
			}
			logs, err := OpenLogs(s, a.Stderr)
			if err != nil {
				return err
			}
			defer logs.Close()
			log := logs.Logger
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return UsageErrorf("serve --addr %s: %v", addr, err)
			}
			ctx := cmd.Context()
			svc, err := service.New(ctx, service.Config{
				Dir:     dir,
				Jobs:    &jobChecker{a: a},
				Token:   token,
				MaxJobs: maxJobs,
				Recover: service.Recovery(s.String("SERVE_RECOVER")),
				Missed:  service.Missed(s.String("SERVE_MISSED_RUNS")),
				MaxBody: int64(s.Int("SERVE_MAX_BODY")),
				Log:     &log,
			})
			if err != nil {
				ln.Close()
				return err
			}
			srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			url := "http://" + ln.Addr().String() + "/"
			log.Info().Str("url", url).Str("dir", dir).Int("max_jobs", maxJobs).Bool("token", token != "").Msg("serving the crawl service")
			fmt.Fprintf(a.Stdout, "gocrawl serve: listening on %s\n", url)
			var serveErr error
			select {
			case <-ctx.Done():
			case <-a.Signals:
			case serveErr = <-served:
			}
			log.Info().Msg("stopping: the running jobs stop gracefully and are resumed by the next serve")
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			go func() { // a second Ctrl-C kills the jobs at once
				select {
				case <-a.Signals:
					cancel()
				case <-sctx.Done():
				}
			}()
			srv.Shutdown(sctx)
			if err := svc.Close(sctx); err != nil {
				return err
			}
			if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
				return serveErr
			}
			return nil
		},
	}
	sf.Add(cmd)
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:6800", "listen on `HOST:PORT` (SERVE_ADDR; port 0 picks a free one)")
	f.StringVar(&dir, "dir", "gocrawl-serve", "keep the database and the jobs in `DIR` (SERVE_DIR)")
	f.IntVar(&maxJobs, "max-jobs", 2, "run at most `N` jobs at once (SERVE_MAX_JOBS)")
	return cmd
}

// jobChecker validates the service's jobs with the checks of `run`: the
// spider, its arguments, the settings with settings.Validate.
type jobChecker struct {
	a  *App
	mu sync.Mutex // ApplyArgs sets the arguments on the registered spider
}

func (c *jobChecker) Spiders() []string { return c.a.SpiderNames() }

// jobdirCheck stands for the JOBDIR the service gives every job, so that
// settings that cannot go with one (REDIS_URL) are refused.
const jobdirCheck = "JOBDIR=gocrawl-serve-job"

func (c *jobChecker) Check(name string, args map[string]string, overrides []string) ([]settings.Entry, error) {
	sp, err := c.a.Spider(name)
	if err != nil {
		return nil, unwrapUsage(err)
	}
	c.mu.Lock()
	argErr := ApplyArgs(sp, args)
	c.mu.Unlock()
	f := SettingsFlags{overrides: append(append([]string(nil), overrides...), jobdirCheck)}
	s, errs := f.load(c.a, sp)
	if len(errs) == 0 {
		errs = append(errs, checkJobSettings(s))
	}
	if err := problems(append([]error{argErr}, errs...)...); err != nil {
		return nil, unwrapUsage(err)
	}
	all, err := s.Entries()
	if err != nil {
		return nil, err
	}
	var out []settings.Entry
	for _, e := range all {
		if e.Source != "default" && e.Name != "JOBDIR" {
			out = append(out, e)
		}
	}
	return out, nil
}

// unwrapUsage drops the exit status of a usage error, for an API answer.
func unwrapUsage(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return errors.New(strings.TrimSpace(ee.Err.Error()))
	}
	return err
}
