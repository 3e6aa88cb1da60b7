package democmd

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/observe/metrics"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// The two-host experiment of docs/metrics.md ("why start rate and per-host
// limits"), as the last phase of `gocrawl demo --experiment`: a strict host (token bucket of 10 requests/s,
// burst 5, 429 with Retry-After) and a lenient control host, the same pages
// on each, a global pool of 50, crawled by three configurations of the same
// engine side by side, each against its own copy of the site (the limiter
// counts per client, so copies do not disturb each other).

func init() {
	addDemoPhase(demoPhase{Name: "politeness experiment", Run: demoExperiment})
}

// experimentConcurrency is the global pool of every configuration.
const experimentConcurrency = 50

// experimentTimeout stops a configuration that has not finished (a slow
// rampup), so the experiment stays about a minute long.
const experimentTimeout = 90 * time.Second

// experimentConfig is one column of the experiment's table.
type experimentConfig struct {
	Name  string
	About string
	// Settings over the demo's settings; strict is the strict host's
	// throttling scope ("localhost:PORT").
	Settings func(strict string) map[string]any
}

var experimentConfigs = []experimentConfig{
	{
		Name:  "naive pool",
		About: "global pool only: no per-host limit, no delay, no backoff, no rate control, no retries",
		Settings: func(string) map[string]any {
			return map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0, "DOWNLOAD_DELAY": 0, "BACKOFF_HTTP_CODES": []int{},
				"BACKOFF_EXCEPTIONS": []string{}, "RETRY_ENABLED": false, "THROTTLING_RATE_CONTROL": false}
		},
	},
	{
		Name:     "defaults",
		About:    "gocrawl defaults (per-host limit, backoff, Retry-After, retries)",
		Settings: func(string) map[string]any { return map[string]any{} },
	},
	{
		Name:  "rampup",
		About: `defaults + "rampup": true for the strict host`,
		Settings: func(strict string) map[string]any {
			return map[string]any{"THROTTLING_SCOPES": map[string]any{strict: map[string]any{"rampup": true}}}
		},
	},
}

// experimentSite is the experiment's simulated site: DefaultDemoConfig's
// strict and lenient hosts with pages each.
func experimentSite(pages int) simsite.Config {
	var hosts []simsite.HostConfig
	for _, h := range simsite.DefaultDemoConfig().Hosts {
		if h.Name == "strict" || h.Name == "lenient" {
			h.Pages.Count = pages
			hosts = append(hosts, h)
		}
	}
	return simsite.Config{Hosts: hosts}
}

// experimentRun is one configuration's crawl and what the site saw.
type experimentRun struct {
	cfg    experimentConfig
	site   *simsite.Server
	urls   map[string]string // host name -> base URL on localhost
	mon    *metrics.Monitor
	eng    *engine.Engine
	result *engine.Result
	wall   time.Duration
	server map[string]simsite.HostStats
	pages  int // per host
	done   atomic.Bool
	err    error
}

// linkSpider follows every link of every page.
type linkSpider struct{ spider.Base }

func (*linkSpider) Name() string { return "experiment" }

func (*linkSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.FollowAll(res, res.Find("a[href]"), nil)
	return nil
}

func demoExperiment(ctx context.Context, d *demo) error {
	pages := d.settings.Int("DEMO_EXPERIMENT_PAGES")
	if !d.experiment || pages == 0 {
		return nil
	}
	w := d.app.Stdout
	fmt.Fprintf(w, "\npoliteness experiment: a strict host (10 requests/s, burst 5, 429 + Retry-After) and a lenient one,\n"+
		"%d pages each, global pool of %d, three configurations side by side (each on its own copy of the site):\n", pages, experimentConcurrency)
	for _, c := range experimentConfigs {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.About)
	}
	fmt.Fprintf(w, "The strict host allows 10 pages/s, so a polite crawl takes at least %s (each configuration stops after %s).\n",
		time.Duration(pages/10)*time.Second, experimentTimeout)

	runs, err := startExperiment(ctx, d, pages)
	defer func() {
		for _, r := range runs {
			if r.site != nil {
				r.site.Close()
			}
		}
	}()
	if err != nil {
		return err
	}
	runExperiment(ctx, d, runs)
	for _, r := range runs {
		if r.err != nil {
			return fmt.Errorf("%s: %w", r.cfg.Name, r.err)
		}
	}
	writeExperimentTable(w, runs)
	return nil
}

// startExperiment serves a site per configuration and builds its engine.
func startExperiment(ctx context.Context, d *demo, pages int) ([]*experimentRun, error) {
	var runs []*experimentRun
	for _, c := range experimentConfigs {
		r := &experimentRun{cfg: c, urls: map[string]string{}, pages: pages}
		runs = append(runs, r)
		site, err := simsite.Start(ctx, experimentSite(pages))
		if err != nil {
			return runs, err
		}
		r.site = site
		for _, h := range site.Hosts() {
			// localhost, not 127.0.0.1: the crawler sees host names, as on
			// the web (an IP literal is an IP throttling scope).
			r.urls[h] = strings.Replace(site.URL(h), "127.0.0.1", "localhost", 1)
		}
		u, err := url.Parse(r.urls["strict"])
		if err != nil {
			return runs, err
		}
		s := d.settings.Clone()
		over := c.Settings(spider.HostKey(u))
		over["CONCURRENT_REQUESTS"] = experimentConcurrency
		// Three crawls share the terminal: no live display or progress
		// lines of their own; the experiment prints its own progress.
		over["PROGRESS_DISPLAY"] = "off"
		over["LOGSTATS_INTERVAL"] = 0
		over["STATS_DUMP_FILE"] = ""
		over["METRICS_ADDR"] = ""
		over["CLOSESPIDER_TIMEOUT"] = experimentTimeout.Seconds()
		if err := s.SetMap(over, settings.SourceSpider, "demo experiment, "+c.Name); err != nil {
			return runs, cli.SettingsError(err)
		}
		r.mon, err = metrics.NewMonitor(s, metrics.MonitorOptions{})
		if err != nil {
			return runs, err
		}
		sp := &linkSpider{Base: spider.Base{StartURLs: []string{r.urls["strict"] + "/", r.urls["lenient"] + "/"}}}
		// Failed pages are the point of the experiment: keep the log to
		// errors.
		log := d.logs.Level(max(d.logs.GetLevel(), zerolog.ErrorLevel)).With().Str("config", c.Name).Logger()
		r.eng, err = engine.New(sp, s, engine.Options{Log: log, Observers: []engine.Observer{r.mon.Recorder()}})
		if err != nil {
			return runs, cli.UsageErrorf("demo experiment, %s: %v", c.Name, err)
		}
		if err := r.mon.Start(r.eng); err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// runExperiment crawls every configuration at once, printing a progress
// line every 10 s, and stops them all on an interrupt.
func runExperiment(ctx context.Context, d *demo, runs []*experimentRun) {
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			start := time.Now()
			r.result, r.err = r.eng.Run(ctx)
			r.wall = time.Since(start)
			reason := ""
			if r.result != nil {
				reason = r.result.Reason
			}
			if _, err := r.mon.Finish(reason); err != nil && r.err == nil {
				r.err = err
			}
			r.server = pageStats(r.site)
			r.done.Store(true)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-done:
			return
		case sig := <-d.app.Signals:
			d.logs.Warn().Str("signal", sig.String()).Msg("stopping the experiment")
			for _, r := range runs {
				r.eng.Stop("shutdown")
			}
		case <-tick.C:
			parts := []string{}
			for _, r := range runs {
				snap := r.mon.Snapshot()
				var strict, lenient int64
				for _, sc := range snap.Scopes {
					switch sc.Scope {
					case hostKeyOf(r.urls["strict"]):
						strict = sc.OK
					case hostKeyOf(r.urls["lenient"]):
						lenient = sc.OK
					}
				}
				state := ""
				if r.done.Load() {
					state = " (done)"
				}
				parts = append(parts, fmt.Sprintf("%s: strict %d ok, lenient %d ok%s", r.cfg.Name, strict, lenient, state))
			}
			d.logs.Info().Stringer("elapsed", time.Since(start).Round(time.Second)).Msg("experiment: " + strings.Join(parts, "; "))
		}
	}
}

func hostKeyOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return spider.HostKey(u)
}

// writeExperimentTable prints the side-by-side table, from the site's own
// records (the outside view), and what to read in it.
func writeExperimentTable(w io.Writer, runs []*experimentRun) {
	const labelWidth = len("lenient starts in first 500 ms")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\n%-*s\t", labelWidth, "")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t", r.cfg.Name)
	}
	fmt.Fprintln(tw)
	row := func(label string, f func(r *experimentRun) string) {
		fmt.Fprintf(tw, "%-*s\t", labelWidth, label)
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t", f(r))
		}
		fmt.Fprintln(tw)
	}
	for _, host := range []string{"strict", "lenient"} {
		hs := func(r *experimentRun) simsite.HostStats { return r.server[host] }
		row(host+" ok", func(r *experimentRun) string { return fmt.Sprint(hs(r).ByStatus[200]) })
		row(host+" 429", func(r *experimentRun) string { return fmt.Sprint(hs(r).ByStatus[429]) })
		row(host+" 429 share", func(r *experimentRun) string {
			return fmt.Sprintf("%.0f%%", 100*float64(hs(r).ByStatus[429])/float64(max(1, hs(r).Requests)))
		})
		row(host+" ok/s", func(r *experimentRun) string {
			h := hs(r)
			if d := h.Last.Sub(h.First).Seconds(); d > 0 {
				return fmt.Sprintf("%.1f", float64(h.ByStatus[200])/d)
			}
			return "-"
		})
		row(host+" peak in flight", func(r *experimentRun) string { return fmt.Sprint(hs(r).PeakConcurrent) })
		row(host+" starts in first 500 ms", func(r *experimentRun) string { return fmt.Sprint(hs(r).StartsFirst500ms) })
		row(host+" done after", func(r *experimentRun) string {
			return hs(r).Last.Sub(experimentStart(r)).Round(100 * time.Millisecond).String()
		})
	}
	row("wall time", func(r *experimentRun) string { return r.wall.Round(100 * time.Millisecond).String() })
	tw.Flush()
	fmt.Fprintln(w, "\nUseful throughput is ok responses per second: a fast 429 also \"completes\". On the strict host:")
	for _, r := range runs {
		h := r.server["strict"]
		fmt.Fprintf(w, "  %-10s %d of %d pages, %.0f%% of its requests answered 429, %d started in the first 500 ms\n",
			r.cfg.Name, h.ByStatus[200], r.pages, 100*float64(h.ByStatus[429])/float64(max(1, h.Requests)), h.StartsFirst500ms)
	}
	fmt.Fprintln(w, "A global pool alone starts its whole width at once and loses the pages that got a 429; the lenient\n"+
		"host shows whether a configuration slows healthy hosts down. Rampup starts a scope at one request at a\n"+
		"time and adds a step only after a quiet BACKOFF_WINDOW (60 s): in a one-minute crawl it stays slow by\n"+
		"design; it pays off on long crawls of APIs that charge per request (docs/throttling.md, Rampup).")
}

func experimentStart(r *experimentRun) time.Time {
	var t time.Time
	for _, h := range r.server {
		if !h.First.IsZero() && (t.IsZero() || h.First.Before(t)) {
			t = h.First
		}
	}
	return t
}

// pageStats is what each host of site saw, pages only: robots.txt is left
// out, so that "ok" counts pages out of the pages the host has.
func pageStats(site *simsite.Server) map[string]simsite.HostStats {
	out := map[string]simsite.HostStats{}
	all := site.Records()
	for _, h := range site.Hosts() {
		var pages simsite.Records
		for _, r := range all.Host(h) {
			if r.Path != "/robots.txt" {
				pages = append(pages, r)
			}
		}
		out[h] = pages.Stats()
	}
	return out
}
