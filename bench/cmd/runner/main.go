// Command runner crawls a benchmark scenario's site with one crawler, in its
// own process so that its CPU time and peak RSS can be measured alone (the
// orchestrator reads them from the process's rusage). It prints one JSON
// line: a Result.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

// Result is what a runner reports; the server-side view (per-host status
// counts, peak concurrency, start rate, Retry-After violations) comes from
// the site process.
type Result struct {
	Crawler  string  `json:"crawler"`
	Variant  string  `json:"variant"`
	Scenario string  `json:"scenario"`
	Seconds  float64 `json:"seconds"`
	// Responses is how many responses (any status) the crawler handled.
	Responses int64 `json:"responses"`
	// OK is how many 2xx responses it parsed.
	OK int64 `json:"ok"`
	// Errors counts non-2xx statuses and download errors.
	Errors int64 `json:"errors"`
}

func main() {
	name := flag.String("scenario", "", "scenario name")
	variant := flag.String("variant", "", "variant of the scenario (gocrawl, colly, ...)")
	urlsJSON := flag.String("urls", "", `JSON object of host name -> base URL, as printed by the site command`)
	flag.Parse()
	if err := run(*name, *variant, *urlsJSON); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(1)
	}
}

func run(name, variant, urlsJSON string) error {
	sc, err := scenario.Find(name)
	if err != nil {
		return err
	}
	v, err := sc.Variant(variant)
	if err != nil {
		return err
	}
	var urls map[string]string
	if err := json.Unmarshal([]byte(urlsJSON), &urls); err != nil {
		return fmt.Errorf("-urls: %w", err)
	}
	var starts []string
	for _, h := range sc.Hosts() {
		u, ok := urls[h]
		if !ok {
			return fmt.Errorf("-urls: no URL for host %q", h)
		}
		starts = append(starts, u+"/")
	}
	slices.Sort(starts)
	ctx := context.Background()
	t0 := time.Now()
	var res Result
	switch v.Crawler {
	case "gocrawl":
		res, err = runGocrawl(ctx, sc, v, urls, starts)
	case "colly":
		res, err = runColly(ctx, sc, v, starts)
	default:
		err = fmt.Errorf("unknown crawler %q", v.Crawler)
	}
	if err != nil {
		return err
	}
	res.Crawler, res.Variant, res.Scenario, res.Seconds = v.Crawler, v.Name, sc.Name, time.Since(t0).Seconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}
