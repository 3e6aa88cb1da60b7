package democmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/examples/books"
	"github.com/gocrawl/gocrawl/examples/quotes"
	"github.com/gocrawl/gocrawl/observe/report"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Default files `gocrawl demo` writes.
const (
	DefaultDemoOutput = "demo-items.jsonl"
	DefaultDemoReport = "demo-report.html"
)

// demo is the state of one `gocrawl demo`, handed to each phase.
type demo struct {
	app *cli.App
	// site serves the demo hosts: "quotes", "books" and "shop" (the
	// rate-limited one).
	site *simsite.Server
	// settings are the demo's settings (defaults, --settings, env, -s);
	// each crawl gets a clone.
	settings *settings.Settings
	// out is the items file; the first crawl overwrites it, later ones append.
	out     string
	started bool
	// report is the HTML report of the throttled crawl ("" = none).
	report string
	logs   *cli.Logs
	// experiment runs the politeness experiment (--experiment).
	experiment bool
	// items counts the items written by every crawl.
	items int64
}

// demoPhase is one step of the demo. Phases run in order; a phase that
// fails stops the demo.
type demoPhase struct {
	Name string
	Run  func(ctx context.Context, d *demo) error
}

// demoPhases are the steps of `gocrawl demo`. Other files of this package
// add phases (the politeness experiment, for example) with addDemoPhase.
var demoPhases = []demoPhase{
	{Name: "site", Run: demoStartSite},
	{Name: "quotes", Run: demoCrawlQuotes},
	{Name: "books", Run: demoCrawlBooks},
	{Name: "throttled", Run: demoCrawlShop},
}

// addDemoPhase appends a phase to the demo.
func addDemoPhase(p demoPhase) { demoPhases = append(demoPhases, p) }

// Demo is the `gocrawl demo` command.
func Demo(a *cli.App) *cobra.Command {
	var (
		sf         cli.SettingsFlags
		out        string
		reportPath string
		experiment bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Crawl a local copy of the tutorial sites in a few seconds, no internet needed",
		Long: `Start a simulated website on 127.0.0.1 with three hosts: a quotes site and a
books site in the spirit of quotes.toscrape.com and books.toscrape.com, and a
"shop" that allows 10 requests per second and answers 429 Too Many Requests
beyond. Crawl the first two with the quotes and books example spiders, writing
the items to demo-items.jsonl (or -o FILE, overwritten), then the shop with
the follow spider to show throttling at work, and write an HTML report of that
crawl to demo-report.html (or --report FILE; --report "" for none).

Results (each crawl's summary, the files written) go to standard output, logs
to standard error. It takes a few seconds. With --experiment it then runs the
two-host politeness experiment of docs/metrics.md (about a minute):
a naive pool, the defaults and rampup side by side.

gocrawl.yaml in the working directory is not read (so a project's
DOWNLOAD_DELAY does not slow the demo down); --settings, GOCRAWL_ variables
and -s apply.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := sf.LoadStandalone(a)
			if err != nil {
				return err
			}
			logs, err := cli.OpenLogs(s, a.Stderr)
			if err != nil {
				return err
			}
			defer logs.Close()
			d := &demo{app: a, settings: s, out: out, report: reportPath, logs: logs, experiment: experiment}
			defer func() {
				if d.site != nil {
					d.site.Close()
				}
			}()
			start := time.Now()
			for _, p := range demoPhases {
				if cmd.Context().Err() != nil || a.Interrupted() {
					fmt.Fprintf(a.Stdout, "\ndemo interrupted before the %s phase\n", p.Name)
					break
				}
				if err := p.Run(cmd.Context(), d); err != nil {
					return fmt.Errorf("demo, %s: %w", p.Name, err)
				}
			}
			fmt.Fprintf(a.Stdout, "\ndemo finished in %s: %d items written to %s\n", time.Since(start).Round(time.Millisecond), d.items, d.out)
			if d.report != "" {
				fmt.Fprintf(a.Stdout, "report of the throttled crawl: %s (open it in a browser)\n", d.report)
			}
			if !d.experiment {
				fmt.Fprintln(a.Stdout, "gocrawl demo --experiment adds the one-minute politeness experiment; docs/cli.md explains every figure above.")
			}
			return nil
		},
	}
	sf.Add(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", DefaultDemoOutput, "write the items to `FILE` (.jsonl, .json or .csv), replacing it")
	cmd.Flags().StringVar(&reportPath, "report", DefaultDemoReport, "write the HTML report of the throttled crawl to `FILE` (\"\" for none)")
	cmd.Flags().BoolVar(&experiment, "experiment", false, "also run the one-minute two-host politeness experiment")
	return cmd
}

// shopPages is the size of the rate-limited host: at 10 requests/s, about
// 4 s of crawling.
const shopPages = 40

// demoStartSite serves the quotes and books sites and the rate-limited
// shop on 127.0.0.1, with a few milliseconds of latency per page like a
// real server.
func demoStartSite(ctx context.Context, d *demo) error {
	latency := simsite.LatencyConfig{Kind: simsite.LatencyUniform, Min: 2 * time.Millisecond, Max: 10 * time.Millisecond}
	shop := strictHost()
	shop.Name, shop.Pages.Count = "shop", shopPages
	srv, err := simsite.Start(ctx, simsite.Config{Hosts: []simsite.HostConfig{
		{Name: "quotes", Seed: 1, Content: demosite.Quotes(), Latency: latency},
		{Name: "books", Seed: 2, Content: demosite.Books(), Latency: latency},
		shop,
	}})
	if err != nil {
		return err
	}
	d.site = srv
	fmt.Fprintf(d.app.Stdout, "demo site: quotes at %s/, books at %s/, a rate-limited shop at %s/\n",
		srv.URL("quotes"), srv.URL("books"), localhost(srv.URL("shop")))
	return nil
}

// strictHost is the simulated site's strict host: a token bucket of 10
// requests/s (burst 5) answering 429 with Retry-After beyond.
func strictHost() simsite.HostConfig {
	for _, h := range simsite.DefaultDemoConfig().Hosts {
		if h.Name == "strict" {
			return h
		}
	}
	panic("simsite.DefaultDemoConfig has no strict host")
}

// localhost names a 127.0.0.1 URL by host name: the crawler sees a host
// name, as on the web (an IP literal is an IP throttling scope).
func localhost(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }

func demoCrawlQuotes(ctx context.Context, d *demo) error {
	u := d.site.URL("quotes") + "/"
	return d.crawl(ctx, quotes.New(), u, map[string]string{"start_urls": u}, nil)
}

func demoCrawlBooks(ctx context.Context, d *demo) error {
	u := d.site.URL("books") + "/"
	return d.crawl(ctx, books.New(), u, map[string]string{"start_urls": u}, nil)
}

// demoCrawlShop follows every link of the rate-limited shop with the
// default throttling: the shop's RateLimit headers pace the crawl from its
// first answer (the rate controller), so it gets every page without a 429
// (without the headers: a burst of 429s at the start, backoff and
// Retry-After, then a steady pace under the limit). Its stats dump (with
// the time series) becomes the HTML report.
func demoCrawlShop(ctx context.Context, d *demo) error {
	over := map[string]any{"METRICS_SERIES_INTERVAL": 0.25}
	var dump string
	if d.report != "" {
		f, err := os.CreateTemp("", "gocrawl-demo-*.json")
		if err != nil {
			return err
		}
		f.Close()
		dump = f.Name()
		defer os.Remove(dump)
		defer os.Remove(strings.TrimSuffix(dump, ".json") + ".scopes.csv")
		over["STATS_DUMP_FILE"] = dump
	}
	u := localhost(d.site.URL("shop")) + "/"
	if err := d.crawl(ctx, &shopSpider{Base: spider.Base{StartURLs: []string{u}}}, u, nil, over); err != nil {
		return err
	}
	if dump == "" {
		return nil
	}
	data, err := report.Load(dump)
	if err != nil {
		return err
	}
	data.Source = "gocrawl demo"
	f, err := os.Create(d.report)
	if err != nil {
		return cli.UsageErrorf("--report %s: %v", d.report, err)
	}
	if err := report.Write(f, data, report.Options{}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// shopSpider follows every link of the shop, emitting nothing.
type shopSpider struct{ spider.Base }

func (*shopSpider) Name() string { return "shop" }

func (*shopSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.FollowAll(res, res.Find("a[href]"), nil)
	return nil
}

// crawl runs sp (starting at from) with args and settings over the demo's,
// appending its items to the demo's output file (the first crawl replaces
// it), and prints its summary to standard output.
func (d *demo) crawl(ctx context.Context, sp spider.Spider, from string, args map[string]string, over map[string]any) error {
	if err := cli.ApplyArgs(sp, args); err != nil {
		return err
	}
	s := d.settings.Clone()
	if p, ok := sp.(spider.SettingsProvider); ok {
		if err := s.SetMap(p.Settings(), settings.SourceSpider, "spider "+sp.Name()); err != nil {
			return cli.SettingsError(err)
		}
	}
	if err := s.SetMap(over, settings.SourceSpider, "gocrawl demo"); err != nil {
		return cli.SettingsError(err)
	}
	ex, err := feed.New(d.out, feed.Options{Overwrite: !d.started, Fields: s.Strings("FEED_EXPORT_FIELDS"), Indent: s.Int("FEED_EXPORT_INDENT")})
	if err != nil {
		return cli.UsageErrorf("-o %s: %v", d.out, err)
	}
	d.started = true
	fmt.Fprintf(d.app.Stdout, "\ncrawling %s with the %s spider...\n", from, sp.Name())
	res, err := d.app.Crawl(ctx, cli.CrawlSpec{Spider: sp, Settings: s, Feeds: []*feed.Exporter{ex}, Log: d.logs.Logger})
	if res != nil {
		cli.WriteSummary(d.app.Stdout, sp.Name(), res)
		d.items += ex.Items()
	}
	return err
}
