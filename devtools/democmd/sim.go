package democmd

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// Sim is the `gocrawl sim` command.
func Sim(a *cli.App) *cobra.Command {
	var (
		configPath string
		demoSites  bool
		port       int
	)
	cmd := &cobra.Command{
		Use:   "sim [--config FILE | --demo-sites] [--port N]",
		Short: "Serve the simulated test website on 127.0.0.1 until interrupted",
		Long: `Serve the simulated website used by the demo, the tests and the benchmarks:
several virtual hosts on 127.0.0.1, each on its own port, with generated pages,
latency, rate limiters (429/503 with Retry-After, RateLimit headers, soft
blocks), robots.txt and injected faults, as the YAML file given with --config
describes (see devtools/simsite, Config). Without --config it serves a
lenient host, a strict host (10 requests/s, burst 5, 429 + Retry-After) and a
polite host (robots.txt Crawl-delay: 1). With --demo-sites it serves the
offline quotes and books sites of the demo and the tutorial instead.
--port N puts the first host on port N, the next on N+1, and so on (default:
free ports).

It prints each host's URL, then serves until Ctrl-C, and prints what each
host saw: requests by status, peak concurrency, start bursts and requests
sent inside a Retry-After window.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := simsite.DefaultDemoConfig()
			switch {
			case configPath != "" && demoSites:
				return cli.UsageErrorf("use --config FILE or --demo-sites, not both")
			case configPath != "":
				var err error
				if cfg, err = simsite.LoadConfigFile(configPath); err != nil {
					return cli.UsageErrorf("--config %s: %v", configPath, err)
				}
			case demoSites:
				cfg = simsite.Config{Hosts: []simsite.HostConfig{
					{Name: "quotes", Seed: 1, Content: demosite.Quotes()},
					{Name: "books", Seed: 2, Content: demosite.Books()},
				}}
			}
			if port < 0 || port+len(cfg.Hosts) > 65536 {
				return cli.UsageErrorf("--port %d: give a port from 1 to %d, or 0 for free ports", port, 65536-len(cfg.Hosts))
			}
			if port > 0 {
				for i := range cfg.Hosts {
					cfg.Hosts[i].Port = port + i
				}
			}
			srv, err := simsite.Start(cmd.Context(), cfg)
			if err != nil {
				return cli.UsageErrorf("cannot serve the simulated site: %v", err)
			}
			defer srv.Close()
			hosts := srv.Hosts()
			for _, h := range hosts {
				fmt.Fprintf(a.Stdout, "%-12s %s/\n", h, srv.URL(h))
			}
			if u := srv.SharedURL(); u != "" {
				fmt.Fprintf(a.Stdout, "%-12s %s/ (routes by Host header: %s)\n", "shared", u, strings.Join(hosts, ", "))
			}
			fmt.Fprintln(a.Stderr, "serving; press Ctrl-C to stop")
			select {
			case <-cmd.Context().Done():
			case <-a.Signals:
			}
			writeSimStats(a.Stdout, srv.Stats())
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "YAML `FILE` describing the hosts (default: the demo's lenient, strict and polite hosts)")
	cmd.Flags().BoolVar(&demoSites, "demo-sites", false, "serve the offline quotes and books sites of the demo and the tutorial")
	cmd.Flags().IntVar(&port, "port", 0, "listen on port `N` for the first host, N+1 for the next, ... (0: free ports)")
	return cmd
}

// writeSimStats prints one line per host of what the server recorded.
func writeSimStats(w io.Writer, st map[string]simsite.HostStats) {
	names := make([]string, 0, len(st))
	for n := range st {
		names = append(names, n)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nhost\trequests\tby status\tlimited\tpeak concurrent\tmax starts/1s\tmax starts/100ms\tfirst 500 ms\tinside Retry-After")
	for _, n := range names {
		s := st[n]
		codes := make([]int, 0, len(s.ByStatus))
		for c := range s.ByStatus {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%d: %d", c, s.ByStatus[c])
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", n, s.Requests, strings.Join(parts, ", "), s.Limited,
			s.PeakConcurrent, s.MaxStarts1s, s.MaxStarts100ms, s.StartsFirst500ms, s.RetryAfterViolations)
	}
	tw.Flush()
}
