package democmd

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/examples/books"
	"github.com/gocrawl/gocrawl/examples/quotes"
	"github.com/gocrawl/gocrawl/feed"
	"github.com/gocrawl/gocrawl/internal/demosite"
	"github.com/gocrawl/gocrawl/internal/simsite"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// DefaultDemoOutput is the file `gocrawl demo` writes items to.
const DefaultDemoOutput = "demo-items.jsonl"

// demo is the state of one `gocrawl demo`, handed to each phase.
type demo struct {
	app *cli.App
	// site serves the demo hosts; "quotes" and "books" are started by the
	// site phase.
	site *simsite.Server
	// settings are the demo's settings (defaults, --settings, env, -s);
	// each crawl gets a clone.
	settings *settings.Settings
	// out is the items file; the first crawl overwrites it, later ones append.
	out     string
	started bool
	log     zerolog.Logger
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
}

// addDemoPhase appends a phase to the demo.
func addDemoPhase(p demoPhase) { demoPhases = append(demoPhases, p) }

// Demo is the `gocrawl demo` command.
func Demo(a *cli.App) *cobra.Command {
	var (
		sf  cli.SettingsFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Crawl a local copy of the tutorial sites, no internet needed",
		Long: `Start a simulated website on 127.0.0.1 with two hosts, a quotes site and a
books site in the spirit of quotes.toscrape.com and books.toscrape.com,
crawl them with the quotes and books example spiders, write the items to
demo-items.jsonl (or -o FILE, overwritten) and print the stats of each crawl.

gocrawl.yaml in the working directory is not read (so a project's
DOWNLOAD_DELAY does not slow the demo down); --settings, GOCRAWL_ variables
and -s apply.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := sf.LoadStandalone(a)
			if err != nil {
				return err
			}
			log, closeLog, err := cli.NewLogger(s, a.Stderr)
			if err != nil {
				return err
			}
			defer closeLog()
			d := &demo{app: a, settings: s, out: out, log: log}
			defer func() {
				if d.site != nil {
					d.site.Close()
				}
			}()
			start := time.Now()
			for _, p := range demoPhases {
				if cmd.Context().Err() != nil || a.Interrupted() {
					fmt.Fprintf(a.Stderr, "\ndemo interrupted before the %s phase\n", p.Name)
					break
				}
				if err := p.Run(cmd.Context(), d); err != nil {
					return fmt.Errorf("demo, %s: %w", p.Name, err)
				}
			}
			fmt.Fprintf(a.Stderr, "\ndemo finished in %s: %d items written to %s\n", time.Since(start).Round(time.Millisecond), d.items, d.out)
			return nil
		},
	}
	sf.Add(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", DefaultDemoOutput, "write the items to `FILE` (.jsonl, .json or .csv), replacing it")
	return cmd
}

// demoStartSite serves the quotes and books sites on 127.0.0.1, with a few
// milliseconds of latency per page like a real server.
func demoStartSite(ctx context.Context, d *demo) error {
	latency := simsite.LatencyConfig{Kind: simsite.LatencyUniform, Min: 2 * time.Millisecond, Max: 10 * time.Millisecond}
	srv, err := simsite.Start(ctx, simsite.Config{Hosts: []simsite.HostConfig{
		{Name: "quotes", Seed: 1, Content: demosite.Quotes(), Latency: latency},
		{Name: "books", Seed: 2, Content: demosite.Books(), Latency: latency},
	}})
	if err != nil {
		return err
	}
	d.site = srv
	fmt.Fprintf(d.app.Stderr, "demo site: quotes at %s/, books at %s/\n", srv.URL("quotes"), srv.URL("books"))
	return nil
}

func demoCrawlQuotes(ctx context.Context, d *demo) error {
	return d.crawl(ctx, quotes.New(), map[string]string{"start_url": d.site.URL("quotes") + "/"})
}

func demoCrawlBooks(ctx context.Context, d *demo) error {
	return d.crawl(ctx, books.New(), map[string]string{"start_url": d.site.URL("books") + "/"})
}

// crawl runs sp with args, appending its items to the demo's output file
// (the first crawl replaces it), and prints its summary.
func (d *demo) crawl(ctx context.Context, sp spider.Spider, args map[string]string) error {
	if err := cli.ApplyArgs(sp, args); err != nil {
		return err
	}
	s := d.settings.Clone()
	if p, ok := sp.(spider.SettingsProvider); ok {
		if err := s.SetMap(p.Settings(), settings.SourceSpider, "spider "+sp.Name()); err != nil {
			return cli.SettingsError(err)
		}
	}
	ex, err := feed.New(d.out, feed.Options{Overwrite: !d.started, Fields: s.Strings("FEED_EXPORT_FIELDS"), Indent: s.Int("FEED_EXPORT_INDENT")})
	if err != nil {
		return cli.UsageErrorf("-o %s: %v", d.out, err)
	}
	d.started = true
	fmt.Fprintf(d.app.Stderr, "\ncrawling %s with the %s spider...\n", args["start_url"], sp.Name())
	res, err := d.app.Crawl(ctx, cli.CrawlSpec{Spider: sp, Settings: s, Feeds: []*feed.Exporter{ex}, Log: d.log})
	if res != nil {
		cli.WriteSummary(d.app.Stderr, sp.Name(), res)
		d.items += ex.Items()
	}
	return err
}
