package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

// errUsage marks command-line errors (exit status 2).
var errUsage = errors.New("usage")

// nginxWorkers is the -nginx-workers flag, passed to the site command.
var nginxWorkers = "1"

// served is the site command's answer to "served": the site's content
// (every generated page) and what the server counted.
type served struct {
	Pages       int     `json:"pages"`
	Bytes       int64   `json:"bytes"`
	Requests    int64   `json:"requests"`
	Connections int64   `json:"connections"` // nginx only
	CPUSeconds  float64 `json:"cpu_seconds"` // the server's CPU time during the run
}

// parseServers reads the -server flag: go, nginx, or both (in the order
// given, which is the order of each round).
func parseServers(s string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		switch {
		case v != scenario.ServerGo && v != scenario.ServerNginx:
			return nil, fmt.Errorf("%w: -server %q: want %s, %s or %s,%s", errUsage, s, scenario.ServerGo, scenario.ServerNginx, scenario.ServerGo, scenario.ServerNginx)
		case slices.Contains(out, v):
			return nil, fmt.Errorf("%w: -server %q: %s twice", errUsage, s, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// canServe refuses a scenario that one of the servers cannot serve.
func canServe(sc scenario.Scenario, servers []string) error {
	if !slices.Contains(servers, scenario.ServerNginx) {
		return nil
	}
	if err := sc.Static(); err != nil {
		return fmt.Errorf("%w: -server nginx: %w; run it with -server go", errUsage, err)
	}
	return nil
}

// siteArgs is the site command's command line for r.
func siteArgs(r *run) []string {
	args := []string{"-scenario", r.sc.Name}
	if r.via == scenario.ServerNginx {
		args = append(args, "-server", r.via, "-nginx-workers", nginxWorkers)
	}
	return args
}

// label names r's scenario in the table and the CSV: "S1" on the Go site
// (as always), "S1@nginx" on nginx.
func (r *run) label() string {
	if r.via == scenario.ServerNginx {
		return r.sc.Name + "@" + r.via
	}
	return r.sc.Name
}

// labels returns the labels of the runs of scenario name, Go site first.
func labels(runs []*run, name string) []string {
	var out []string
	for _, r := range runs {
		if r.sc.Name == name && !slices.Contains(out, r.label()) {
			out = append(out, r.label())
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(a) - len(b) })
	return out
}

type adder func(sc, metric, target string, ratio bool, f func(r *run) (float64, bool))

// contentRows adds what the server answered and what each crawler
// received, against what the site holds: every crawler must see every page.
func contentRows(add adder, sc string, runs []*run) {
	site := served{}
	for _, r := range runs {
		if r.label() == sc && r.served.Pages > 0 {
			site = r.served
		}
	}
	if site.Pages == 0 {
		return
	}
	add(sc, "requests (server)", "", false, func(r *run) (float64, bool) {
		return float64(r.served.Requests), r.served.Pages > 0
	})
	add(sc, "server CPU s / 1000 pages", "", false, func(r *run) (float64, bool) {
		return r.served.CPUSeconds / float64(max(1, r.served.Requests)) * 1000, r.served.Requests > 0
	})
	add(sc, "connections (server)", "", false, func(r *run) (float64, bool) {
		return float64(r.served.Connections), r.served.Connections > 0
	})
	add(sc, "pages ok (crawler)", fmt.Sprintf("%d (the site's pages)", site.Pages), false, func(r *run) (float64, bool) {
		return float64(r.result.OK), true
	})
	add(sc, "body bytes (crawler)", fmt.Sprintf("%d (the site's bytes)", site.Bytes), false, func(r *run) (float64, bool) {
		return float64(r.result.Bytes), true
	})
}

// checkContent prints whether every run (not only the medians) received
// every page of its site and exactly its bytes, and whether the servers
// held the same content.
func checkContent(w io.Writer, runs []*run) {
	sites := map[string]served{}
	var order []string
	var bad []string
	for _, r := range runs {
		if r.served.Pages == 0 {
			continue
		}
		if _, ok := sites[r.label()]; !ok {
			order = append(order, r.label())
		}
		sites[r.label()] = r.served
		if r.result.OK != int64(r.served.Pages) || r.result.Bytes != r.served.Bytes {
			bad = append(bad, fmt.Sprintf("%s %s round %d: %d pages ok, %d bytes, of %d pages, %d bytes",
				r.label(), r.variant.Name, r.round+1, r.result.OK, r.result.Bytes, r.served.Pages, r.served.Bytes))
		}
	}
	if len(order) == 0 {
		return
	}
	slices.Sort(order)
	for _, l := range order {
		fmt.Fprintf(w, "content: %s holds %d pages, %d bytes\n", l, sites[l].Pages, sites[l].Bytes)
	}
	for _, l := range order[1:] {
		a, b := sites[order[0]], sites[l]
		if base(l) == base(order[0]) && (a.Pages != b.Pages || a.Bytes != b.Bytes) {
			bad = append(bad, fmt.Sprintf("%s and %s hold different content", order[0], l))
		}
	}
	if len(bad) == 0 {
		fmt.Fprintln(w, "content check: every run received every page of its site, and exactly its bytes")
		return
	}
	for _, b := range bad {
		fmt.Fprintln(w, "content check FAILED:", b)
	}
}

func base(label string) string { return strings.SplitN(label, "@", 2)[0] }

// parseScenarios reads -scenarios: names of scenario.All() or their
// families (S2 for S2 and S2-alone). An unknown name is a usage error,
// not a scenario silently skipped.
func parseScenarios(only string) (map[string]bool, error) {
	known := map[string]bool{}
	var names []string
	for _, sc := range scenario.All() {
		fam := strings.SplitN(sc.Name, "-", 2)[0]
		if !known[fam] {
			names = append(names, fam)
		}
		known[sc.Name], known[fam] = true, true
	}
	want := map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !known[s] {
			return nil, fmt.Errorf("%w: -scenarios: no scenario %q (have %s)", errUsage, s, strings.Join(names, ", "))
		}
		want[s] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("%w: -scenarios: none given", errUsage)
	}
	return want, nil
}
