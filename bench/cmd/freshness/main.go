// Command freshness measures how fresh revisit schedules keep a corpus:
// a simulated site whose pages change on their own schedules (some about
// hourly, some daily at a fixed time, some weekly, some never; drawn from
// a seed) is revisited on a fake clock by the Fixed and the Adaptive
// schedules of package recrawl under the same request budget, and each
// run's stale page-hours are counted: for every page, the time between
// its first change after a visit and the next visit.
//
//	go run ./cmd/freshness                 # the figures of docs/recrawl.md
//	go run ./cmd/freshness -pages 10000 -days 56 -seed 7
//
// Nothing is fetched and nothing sleeps: the whole run takes about a
// second. It exits 1 if the adaptive schedule does not keep at least
// -want times fewer stale page-hours than the fixed one.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gocrawl/gocrawl/recrawl"
)

type config struct {
	pages        int
	days, warmup int
	seed         uint64
	perHour      float64 // 0 = pages / 24: every page once a day
	interval     time.Duration
	want         float64
	grow, shrink float64
	min, max     time.Duration
	mix          string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.pages, "pages", 1000, "pages of the simulated site")
	flag.IntVar(&cfg.days, "days", 35, "simulated days")
	flag.IntVar(&cfg.warmup, "warmup", 7, "first days not measured (the first crawl and the adaptive schedule's learning)")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the site's changes")
	flag.Float64Var(&cfg.perHour, "budget", 0, "revisits per hour for both schedules (RECRAWL_BUDGET); 0 = pages/24, enough to visit every page once a day")
	flag.DurationVar(&cfg.interval, "interval", 24*time.Hour, "RECRAWL_INTERVAL: the fixed interval, and the adaptive schedule's first one (bounds: interval/24 and interval x 30)")
	flag.Float64Var(&cfg.grow, "grow", 0, "the adaptive schedule's Grow factor (0 = recrawl.DefaultGrow)")
	flag.Float64Var(&cfg.shrink, "shrink", 0, "the adaptive schedule's Shrink factor (0 = recrawl.DefaultShrink)")
	flag.DurationVar(&cfg.min, "min", 0, "RECRAWL_MIN_INTERVAL (0 = interval/24)")
	flag.DurationVar(&cfg.max, "max", 0, "RECRAWL_MAX_INTERVAL (0 = interval x 30)")
	flag.StringVar(&cfg.mix, "mix", "hourly=0.1, daily=0.3, weekly=0, never=0.6", "share of each kind of page")
	flag.Float64Var(&cfg.want, "want", 1.5, "exit 1 unless fixed stale page-hours >= want x adaptive's")
	flag.Parse()
	ratio, err := measure(os.Stdout, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "freshness:", err)
		os.Exit(2)
	}
	if ratio < cfg.want {
		fmt.Fprintf(os.Stderr, "freshness: adaptive keeps %.2fx fewer stale page-hours than fixed, want >= %.2fx\n", ratio, cfg.want)
		os.Exit(1)
	}
}

// measure runs the three schedules on the same site and budget, writes
// the table to w and returns fixed / adaptive stale page-hours.
func measure(w io.Writer, cfg config) (float64, error) {
	if cfg.pages <= 0 || cfg.days <= cfg.warmup || cfg.warmup < 0 || cfg.interval <= 0 {
		return 0, fmt.Errorf("need -pages > 0, -days > -warmup >= 0 and -interval > 0")
	}
	if err := setMix(cfg.mix); err != nil {
		return 0, err
	}
	if cfg.perHour == 0 {
		cfg.perHour = float64(cfg.pages) / 24
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	from := start.Add(time.Duration(cfg.warmup) * 24 * time.Hour)
	to := start.Add(time.Duration(cfg.days) * 24 * time.Hour)
	pages := site(cfg.pages, cfg.seed, start, to)
	if cfg.min == 0 {
		cfg.min = cfg.interval / 24
	}
	if cfg.max == 0 {
		cfg.max = cfg.interval * 30
	}
	adaptive := recrawl.Adaptive(recrawl.AdaptiveConfig{Initial: cfg.interval, Min: cfg.min, Max: cfg.max, Grow: cfg.grow, Shrink: cfg.shrink})
	runs := []run{
		{"fixed", recrawl.Fixed(cfg.interval), false, cfg.perHour},
		{"adaptive", adaptive, false, cfg.perHour},
		{"adaptive + sitemap hints", adaptive, true, cfg.perHour},
	}
	var res []result
	for _, r := range runs {
		x, err := simulate(pages, r, start, from, to)
		if err != nil {
			return 0, err
		}
		res = append(res, x)
	}
	changes := 0
	for _, p := range pages {
		for _, t := range p.changes {
			if !t.Before(from) {
				changes++
			}
		}
	}
	fmt.Fprintf(w, "site: %d pages (%s), seed %d; %d changes in the measured %d days (days %d to %d); budget %.1f revisits/h for every schedule; interval %v\n\n",
		cfg.pages, cfg.mix, cfg.seed, changes, cfg.days-cfg.warmup, cfg.warmup, cfg.days, cfg.perHour, cfg.interval)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "schedule\trequests\tstale page-hours\tper page per day\tvs fixed\t")
	for _, c := range classes {
		fmt.Fprintf(tw, "%s\t", c.name)
	}
	fmt.Fprintln(tw)
	days := float64(cfg.days - cfg.warmup)
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2fh\t%.2fx\t", r.name, r.requests, r.stale, r.stale/float64(r.pages)/days, res[0].stale/r.stale)
		for i, s := range r.staleBy {
			fmt.Fprintf(tw, "%.0f (%d)\t", s, r.reqBy[i])
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return 0, err
	}
	fmt.Fprintln(w, "\nper kind of page: stale page-hours (requests); requests and stale page-hours are those of the measured days")
	return res[0].stale / res[1].stale, nil
}

// setMix sets the shares of the page classes from "hourly=0.1, ...".
func setMix(mix string) error {
	total := 0.0
	for i := range classes {
		classes[i].share = 0
	}
	for _, kv := range strings.Split(mix, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("-mix: %q is not KIND=SHARE", kv)
		}
		i := slices.IndexFunc(classes, func(c class) bool { return c.changefreq == k })
		if i < 0 {
			return fmt.Errorf("-mix: unknown kind %q (hourly, daily, weekly, never)", k)
		}
		classes[i].share = f
		total += f
	}
	if total <= 0 {
		return fmt.Errorf("-mix: shares sum to 0")
	}
	for i := range classes {
		classes[i].share /= total
	}
	return nil
}
