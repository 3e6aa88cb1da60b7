// Command site serves the simulated site of one benchmark scenario in its
// own process, so the crawler being measured does not share CPU time or
// memory accounting with the server.
//
// With -server go (the default) the site is devtools/simsite. With -server
// nginx the same pages, rendered by devtools/simsite's own code, are
// written as static files to a temporary folder and served by an nginx
// process started (and stopped) by this command: only for static
// scenarios (S1), see nginx.go for the configuration.
//
// It prints one JSON line mapping host names to base URLs, then reads
// commands on standard input, one per line:
//
//	stats   prints a JSON line: host name -> simsite.HostStats (with
//	        nginx, only Requests, and only for a one-host site)
//	served  prints a JSON line: the site's pages and bytes, the requests
//	        served since the start and, with nginx, the connections
//	        accepted (see served)
//	quit    (or end of input, SIGINT, SIGTERM) stops the site and exits
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/internal/cputime"
)

// site is a running site of either kind.
type site interface {
	// URLs maps host names to base URLs.
	URLs() map[string]string
	Stats() (map[string]simsite.HostStats, error)
	Served() (served, error)
	Close() error
}

// served is the answer to the served command.
type served struct {
	content
	// Requests is how many requests the server answered since it started
	// (status probes of the nginx mode not counted).
	Requests int64 `json:"requests"`
	// Connections is how many TCP connections nginx accepted (0 with the
	// Go site, which does not count them).
	Connections int64 `json:"connections,omitempty"`
	// CPUSeconds is the server's user + system time since it started
	// serving: this process's for the Go site (its rendering for this
	// answer not counted); nginx's master and workers' (10 ms ticks).
	CPUSeconds float64 `json:"cpu_seconds"`
}

// errUsage marks errors in the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	name := flag.String("scenario", "", "scenario to serve (S1, S2, S3, S4-alone, S4-mixed)")
	server := flag.String("server", scenario.ServerGo, "who serves the site: go (devtools/simsite) or nginx (the same pages as static files; static scenarios only)")
	var ng nginxOptions
	flag.StringVar(&ng.bin, "nginx", "", "nginx binary (default: nginx on PATH, else /usr/sbin/nginx)")
	flag.StringVar(&ng.workers, "nginx-workers", "1", "nginx worker_processes: a number or auto")
	flag.Parse()
	if err := run(*name, *server, ng); err != nil {
		fmt.Fprintln(os.Stderr, "site:", err)
		if errors.Is(err, errUsage) || errors.Is(err, scenario.ErrNotStatic) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(name, server string, ng nginxOptions) error {
	sc, err := scenario.Find(name)
	if err != nil {
		return fmt.Errorf("%w: -scenario: %w", errUsage, err)
	}
	var s site
	switch server {
	case scenario.ServerGo:
		s, err = startGo(sc)
	case scenario.ServerNginx:
		s, err = startNginx(sc, ng)
	default:
		return fmt.Errorf("%w: -server %q: want %s or %s", errUsage, server, scenario.ServerGo, scenario.ServerNginx)
	}
	if err != nil {
		return err
	}
	// Stopped on quit, end of input, or a signal (Ctrl-C reaches the
	// whole process group): nginx must not outlive the bench.
	var closeOnce sync.Once
	var closeErr error
	stop := func() error {
		closeOnce.Do(func() { closeErr = s.Close() })
		return closeErr
	}
	defer stop()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		got := <-sig
		_ = stop()
		fmt.Fprintln(os.Stderr, "site: stopped by", got)
		os.Exit(1)
	}()

	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(s.URLs()); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var v any
		switch strings.TrimSpace(in.Text()) {
		case "stats":
			v, err = s.Stats()
		case "served":
			v, err = s.Served()
		case "quit":
			return stop()
		default:
			continue
		}
		if err != nil {
			return err
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil {
		return err
	}
	return stop()
}

// goSite is the simulated site, served by this process.
type goSite struct {
	sc   scenario.Scenario
	srv  *simsite.Server
	urls map[string]string
	cpu0 time.Duration // the process's CPU time when the site was up
}

func startGo(sc scenario.Scenario) (*goSite, error) {
	srv, err := simsite.Start(context.Background(), sc.Site)
	if err != nil {
		return nil, err
	}
	urls := map[string]string{}
	for _, h := range srv.Hosts() {
		// localhost (not 127.0.0.1) so crawlers see host names, as on the
		// web: an IP literal is a different kind of throttling scope.
		urls[h] = strings.Replace(srv.URL(h), "127.0.0.1", "localhost", 1)
	}
	return &goSite{sc: sc, srv: srv, urls: urls, cpu0: cputime.Process()}, nil
}

func (g *goSite) URLs() map[string]string { return g.urls }

func (g *goSite) Stats() (map[string]simsite.HostStats, error) { return g.srv.Stats(), nil }

// Served renders the pages again (in process, as nginx mode writes them)
// to count them: only for static scenarios, whose pages are the whole site.
func (g *goSite) Served() (served, error) {
	s := served{CPUSeconds: (cputime.Process() - g.cpu0).Seconds()}
	if err := g.sc.Static(); err != nil {
		return s, err
	}
	c, err := renderSite(g.sc.Site, hostHeaders(g.urls), nil)
	if err != nil {
		return s, err
	}
	s.content = c
	for _, st := range g.srv.Stats() {
		s.Requests += int64(st.Requests)
	}
	return s, nil
}

func (g *goSite) Close() error { return g.srv.Close() }

// hostHeaders maps host names to the Host header a crawler sends them
// ("localhost:PORT").
func hostHeaders(urls map[string]string) map[string]string {
	out := map[string]string{}
	for h, u := range urls {
		out[h] = strings.TrimPrefix(u, "http://")
	}
	return out
}
