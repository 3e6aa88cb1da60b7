// Command bench runs the benchmark scenarios with gocrawl,
// Colly and a bare fetch loop, each crawler in its own process
// (bench/cmd/runner) against a site served by another process
// (bench/cmd/site), then prints one table with the ratios (gocrawl/bare,
// gocrawl/colly, JOBDIR/memory) and writes every number as CSV; the
// memory curves of S1M go to a second CSV (-rss.csv).
//
//	go build -o bin/ ./cmd/... && bin/bench -bin bin -csv results.csv
//
// bench/run.sh does exactly that.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// staggerBy separates the starts of the rate-limited runs.
const staggerBy = 8 * time.Second

// run is one crawler variant against a fresh site.
type run struct {
	sc      scenario.Scenario
	variant scenario.Variant
	round   int    // 0-based repetition of an S1 run
	via     string // who serves the site: scenario.ServerGo or scenario.ServerNginx

	result struct {
		Seconds   float64 `json:"seconds"`
		Responses int64   `json:"responses"`
		OK        int64   `json:"ok"`
		Errors    int64   `json:"errors"`
		Bytes     int64   `json:"bytes"`
		RSS       []struct {
			Pages   int64   `json:"pages"`
			Seconds float64 `json:"seconds"`
			RSSMB   float64 `json:"rss_mb"`
			HeapMB  float64 `json:"heap_mb"`
			LiveMB  float64 `json:"heap_live_mb"`
		} `json:"rss"`
	}
	cpu    time.Duration // user + system time of the runner process
	dbCPU  time.Duration // the database server's CPU time during the run (S1F with BENCH_POSTGRESQL_PID)
	rssKB  int64         // peak resident set size of the runner process
	server map[string]simsite.HostStats
	served served // the site's content and counters (static sites only)
	err    error
}

func main() {
	bin := flag.String("bin", "bin", "folder with the site and runner binaries")
	only := flag.String("scenarios", "S1,S2,S3,S4", "comma-separated scenarios to run (S2 includes S2-alone, S4 both S4 runs)")
	csvPath := flag.String("csv", "bench-results.csv", "where to write every measurement as CSV")
	repeat := flag.Int("repeat", 3, "runs of each S1 crawler (interleaved); the run with the median pages/s is kept")
	variants := flag.String("variants", "", "comma-separated variants to run (default: every variant of each scenario)")
	servers := flag.String("server", scenario.ServerGo, "who serves the sites: go (the simulated site), nginx (the same pages as static files, static scenarios only: S1), or go,nginx (both, interleaved round by round)")
	flag.StringVar(&nginxWorkers, "nginx-workers", "1", "nginx worker_processes with -server nginx: a number or auto")
	flag.Parse()
	if err := mainErr(*bin, *only, *variants, *servers, *csvPath, max(1, *repeat)); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func mainErr(bin, only, variants, servers, csvPath string, repeat int) error {
	serverList, err := parseServers(servers)
	if err != nil {
		return err
	}
	want, err := parseScenarios(only)
	if err != nil {
		return err
	}
	if dbServer, err = dbPID(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	wantVariant := map[string]bool{}
	for _, s := range strings.Split(variants, ",") {
		if s = strings.TrimSpace(s); s != "" {
			wantVariant[s] = true
		}
	}
	var serial, parallel []*run
	for _, sc := range scenario.All() {
		if !want[sc.Name] && !want[strings.SplitN(sc.Name, "-", 2)[0]] {
			continue
		}
		if sc.Broad != nil {
			continue // broad crawls have their own driver: bench/cmd/broad (bench/broad.sh)
		}
		if err := canServe(sc, serverList); err != nil {
			return err
		}
		n := 1
		if sc.Name == "S1" || sc.Name == "S1F" {
			n = repeat // CPU-bound: the noisiest, given shared machines
		}
		for round := range n { // interleaved: A B A B (each server in turn)
			for _, srv := range serverList {
				for _, v := range sc.Variants {
					if len(wantVariant) > 0 && !wantVariant[v.Name] {
						continue
					}
					r := &run{sc: sc, variant: v, round: round, via: srv}
					// Rate-limited scenarios barely use the CPU: run them side
					// by side, each against its own site process (limits are
					// per site).
					if sc.Name == "S2" || sc.Name == "S3" {
						parallel = append(parallel, r)
					} else {
						serial = append(serial, r)
					}
				}
			}
		}
	}
	for _, r := range serial { // CPU-bound or timing-sensitive: one at a time
		fmt.Fprintf(os.Stderr, "running %s %s...\n", r.label(), r.variant.Name)
		r.err = r.do(bin)
	}
	// The rate-limited runs overlap, but start staggerBy apart so that
	// their CPU-bound part (the lenient host of S2, done within seconds)
	// runs alone and its finish time compares with S2-alone's.
	var wg sync.WaitGroup
	for i, r := range parallel {
		if i > 0 {
			time.Sleep(staggerBy)
		}
		fmt.Fprintf(os.Stderr, "starting %s %s...\n", r.sc.Name, r.variant.Name)
		wg.Go(func() { r.err = r.do(bin) })
	}
	wg.Wait()
	var ok []*run
	var errs []error
	for _, r := range append(serial, parallel...) {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", r.label(), r.variant.Name, r.err))
		} else {
			ok = append(ok, r)
		}
	}
	kept := medianS1(ok)
	rows := table(kept)
	printTable(os.Stdout, rows)
	checkContent(os.Stdout, ok)
	if err := writeCSV(csvPath, rows); err != nil {
		errs = append(errs, err)
	}
	if err := writeRSSCurves(strings.TrimSuffix(csvPath, ".csv")+"-rss.csv", ok); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// do starts the site, runs the crawler against it, and reads the
// server's records.
func (r *run) do(bin string) error {
	site := exec.Command(filepath.Join(bin, "site"), siteArgs(r)...)
	site.Stderr = os.Stderr
	in, err := site.StdinPipe()
	if err != nil {
		return err
	}
	outPipe, err := site.StdoutPipe()
	if err != nil {
		return err
	}
	if err := site.Start(); err != nil {
		return err
	}
	defer site.Wait()
	defer in.Close()
	out := bufio.NewReader(outPipe)
	urls, err := out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("site: %w", err)
	}

	runner := exec.Command(filepath.Join(bin, "runner"), "-scenario", r.sc.Name, "-variant", r.variant.Name, "-urls", strings.TrimSpace(string(urls)),
		"-rss-every", fmt.Sprint(r.sc.RSSEvery))
	runner.Stderr = os.Stderr
	var db0 time.Duration
	measureDB := dbServer > 0 && r.sc.Name == "S1F"
	if measureDB {
		if db0, err = treeCPU(dbServer); err != nil {
			return fmt.Errorf("database server: %w", err)
		}
	}
	res, err := runner.Output()
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if measureDB {
		// The runner's connection ends with it; its backend's time counts
		// once the postmaster has reaped it.
		time.Sleep(300 * time.Millisecond)
		db1, err := treeCPU(dbServer)
		if err != nil {
			return fmt.Errorf("database server: %w", err)
		}
		r.dbCPU = db1 - db0
	}
	if err := json.Unmarshal(res, &r.result); err != nil {
		return fmt.Errorf("runner output %q: %w", res, err)
	}
	ps := runner.ProcessState
	r.cpu = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		r.rssKB = ru.Maxrss
	}

	if err := ask(in, out, "stats", &r.server); err != nil {
		return err
	}
	if r.sc.Static() == nil {
		if err := ask(in, out, "served", &r.served); err != nil {
			return err
		}
	}
	_, err = io.WriteString(in, "quit\n")
	return err
}

// ask sends the site command cmd and decodes its one-line JSON answer
// into v.
func ask(in io.Writer, out *bufio.Reader, cmd string, v any) error {
	if _, err := io.WriteString(in, cmd+"\n"); err != nil {
		return err
	}
	line, err := out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("site %s: %w", cmd, err)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("site %s: %w", cmd, err)
	}
	return nil
}

// medianS1 keeps, of the repeated S1 runs of each variant, the one with
// the median pages/s. It prints every run first, round by round, with the
// ratios of each round's pair (runs of one round are next to each other in
// time, so they met the same load).
func medianS1(runs []*run) []*run {
	var out []*run
	type roundKey struct {
		round int
		label string
	}
	byVariant := map[string][]*run{} // label + " " + variant -> runs
	byRound := map[roundKey]map[string]*run{}
	var keys []string
	var rounds []roundKey
	for _, r := range runs {
		if r.sc.Name == "S1" || r.sc.Name == "S1F" {
			k := r.label() + " " + r.variant.Name
			if byVariant[k] == nil {
				keys = append(keys, k)
			}
			byVariant[k] = append(byVariant[k], r)
			rk := roundKey{r.round, r.label()}
			if byRound[rk] == nil {
				byRound[rk] = map[string]*run{}
				rounds = append(rounds, rk)
			}
			byRound[rk][r.variant.Name] = r
		} else {
			out = append(out, r)
		}
	}
	rate := func(r *run) float64 { return float64(r.result.Responses) / r.result.Seconds }
	for _, rk := range rounds {
		rs := byRound[rk]
		var b strings.Builder
		fmt.Fprintf(&b, "%s round %d:", rk.label, rk.round+1)
		for _, v := range variantOrder {
			if r := rs[v]; r != nil {
				fmt.Fprintf(&b, " %s %.0f p/s %.3f cpu-s/1000", v, rate(r), r.cpu.Seconds()/float64(r.result.Responses)*1000)
				if r.dbCPU > 0 {
					fmt.Fprintf(&b, " (db %.3f)", r.dbCPU.Seconds()/float64(r.result.Responses)*1000)
				}
				b.WriteByte(';')
			}
		}
		for _, q := range ratios {
			if n, d := rs[q.num], rs[q.den]; n != nil && d != nil {
				fmt.Fprintf(&b, " %s %.2fx;", q.name, rate(n)/rate(d))
			}
		}
		fmt.Fprintln(os.Stderr, strings.TrimSuffix(b.String(), ";"))
	}
	for _, k := range keys {
		rs := byVariant[k]
		slices.SortFunc(rs, func(a, b *run) int {
			return cmpFloat(float64(a.result.Responses)/a.result.Seconds, float64(b.result.Responses)/b.result.Seconds)
		})
		for _, r := range rs {
			fmt.Fprintf(os.Stderr, "%s %s: %.0f pages/s, %.3f CPU s/1000 pages\n", r.label(), r.variant.Name,
				float64(r.result.Responses)/r.result.Seconds, r.cpu.Seconds()/float64(r.result.Responses)*1000)
		}
		out = append(out, rs[len(rs)/2])
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// row is one measurement across variants.
type row struct {
	scenario, metric, target string
	values                   map[string]float64 // variant -> value
	ratio                    bool               // print gocrawl/colly
}

func find(runs []*run, sc, variant string) *run {
	i := slices.IndexFunc(runs, func(r *run) bool { return r.sc.Name == sc && r.variant.Name == variant })
	if i < 0 {
		return nil
	}
	return runs[i]
}

// start is the first request of the run, over every host.
func (r *run) start() time.Time {
	var t time.Time
	for _, h := range r.server {
		if t.IsZero() || h.First.Before(t) {
			t = h.First
		}
	}
	return t
}

// finish is when the run's last request to host ended, from its start.
func (r *run) finish(host string) float64 { return r.server[host].Last.Sub(r.start()).Seconds() }

func okPerSecond(h simsite.HostStats) float64 {
	if d := h.Last.Sub(h.First).Seconds(); d > 0 {
		return float64(h.ByStatus[200]) / d
	}
	return 0
}

func table(runs []*run) []row {
	var rows []row
	add := func(sc, metric, target string, ratio bool, f func(r *run) (float64, bool)) {
		rw := row{scenario: sc, metric: metric, target: target, ratio: ratio, values: map[string]float64{}}
		for _, r := range runs {
			if r.label() != sc {
				continue
			}
			if v, ok := f(r); ok {
				rw.values[r.variant.Name] = v
			}
		}
		if len(rw.values) > 0 {
			rows = append(rows, rw)
		}
	}
	always := func(f func(r *run) float64) func(r *run) (float64, bool) {
		return func(r *run) (float64, bool) { return f(r), true }
	}

	for _, sc := range append(append(labels(runs, "S1"), labels(runs, "S1F")...), labels(runs, "S1M")...) {
		base := strings.SplitN(sc, "@", 2)[0]
		// S1F: one item a page, so pages/s is items/s.
		target := map[string]string{"S1": ">= 60% bare, >= 3x colly, jobdir >= 90%, warc >= 80%", "S1F": "sqlite, postgresql >= 90% jsonl"}[base]
		add(sc, "pages/s", target, true, always(func(r *run) float64 { return float64(r.result.Responses) / r.result.Seconds }))
		add(sc, "CPU s / 1000 pages", map[string]string{"S1": "<= 2x bare"}[base], true, always(func(r *run) float64 { return r.cpu.Seconds() / float64(r.result.Responses) * 1000 }))
		add(sc, "database CPU s / 1000 pages", "", true, func(r *run) (float64, bool) {
			return r.dbCPU.Seconds() / float64(r.result.Responses) * 1000, r.dbCPU > 0
		})
		add(sc, "peak RSS MB", map[string]string{"S1": "<= 64"}[base], true, always(func(r *run) float64 { return float64(r.rssKB) / 1024 }))
		// nginx keeps no log, so no status counts: its request count
		// and the crawler's own counts below stand for it.
		add(sc, "pages ok (server)", "", false, func(r *run) (float64, bool) {
			st, ok := r.server["one"]
			return float64(st.ByStatus[200]), ok && st.ByStatus != nil
		})
		contentRows(add, sc, runs)
	}
	add("S1M", "RSS MB at 100k pages", "", true, func(r *run) (float64, bool) {
		if len(r.result.RSS) == 0 {
			return 0, false
		}
		return r.result.RSS[0].RSSMB, true
	})
	// The target is a flat curve after warm-up: the highest sample from
	// 100k pages on (not only the last one) against the one at 100k.
	add("S1M", "RSS MB highest / at 100k", "<= 1.2 (jobdir: <= 150 MB)", false, func(r *run) (float64, bool) {
		if len(r.result.RSS) == 0 || r.result.RSS[0].RSSMB == 0 {
			return 0, false
		}
		hi := 0.0
		for _, p := range r.result.RSS {
			hi = max(hi, p.RSSMB)
		}
		return hi / r.result.RSS[0].RSSMB, true
	})
	add("S1M", "RSS MB at the end / at 100k", "", false, func(r *run) (float64, bool) {
		if len(r.result.RSS) == 0 || r.result.RSS[0].RSSMB == 0 {
			return 0, false
		}
		return r.result.RSS[len(r.result.RSS)-1].RSSMB / r.result.RSS[0].RSSMB, true
	})

	for _, host := range []string{"strict", "lenient"} {
		add("S2", host+" ok", "500", false, always(func(r *run) float64 { return float64(r.server[host].ByStatus[200]) }))
		add("S2", host+" 429", "", false, always(func(r *run) float64 { return float64(r.server[host].ByStatus[429]) }))
		add("S2", host+" ok/s", "", true, always(func(r *run) float64 { return okPerSecond(r.server[host]) }))
		add("S2", host+" peak in-flight", "", false, always(func(r *run) float64 { return float64(r.server[host].PeakConcurrent) }))
		add("S2", host+" starts in first 500 ms", "", false, always(func(r *run) float64 { return float64(r.server[host].StartsFirst500ms) }))
		add("S2", host+" finish s", "", true, always(func(r *run) float64 { return r.finish(host) }))
	}
	add("S2", "strict 429 share %", "< 5", false, always(func(r *run) float64 {
		h := r.server["strict"]
		return 100 * float64(h.ByStatus[429]) / float64(max(1, h.Requests))
	}))
	add("S2", "strict ok/s % of 10/s allowed", ">= 80", false, always(func(r *run) float64 { return 100 * okPerSecond(r.server["strict"]) / scenario.StrictRate }))
	add("S2", "lenient finish / alone", "<= 1.25", false, func(r *run) (float64, bool) {
		alone := find(runs, "S2-alone", r.variant.Name)
		if alone == nil {
			return 0, false
		}
		return r.finish("lenient") / alone.finish("lenient"), true
	})
	add("S2-alone", "lenient finish s", "", true, always(func(r *run) float64 { return r.finish("lenient") }))

	add("S3", "requests inside Retry-After", "0", false, always(func(r *run) float64 { return float64(r.server["retry"].RetryAfterViolations) }))
	add("S3", "429", "", false, always(func(r *run) float64 { return float64(r.server["retry"].ByStatus[429]) }))
	add("S3", "ok", "100", false, always(func(r *run) float64 { return float64(r.server["retry"].ByStatus[200]) }))

	add("S4-alone", "fast finish s", "", true, always(func(r *run) float64 { return r.finish("fast") }))
	add("S4-mixed", "fast finish s", "", true, always(func(r *run) float64 { return r.finish("fast") }))
	add("S4-mixed", "slow finish s", "", true, always(func(r *run) float64 { return r.finish("slow") }))
	add("S4-mixed", "fast finish / alone", "", true, func(r *run) (float64, bool) {
		alone := find(runs, "S4-alone", r.variant.Name)
		if alone == nil {
			return 0, false
		}
		return r.finish("fast") / alone.finish("fast"), true
	})
	return rows
}

var variantOrder = []string{"bare", "gocrawl", "gocrawl-follow", "gocrawl-follow-jobdir", "gocrawl-follow-warc", "gocrawl-follow-warc-store", "gocrawl-follow-nospill", "gocrawl-rampup", "colly", "bare-fasthttp", "gocrawl-follow-fasthttp",
	"gocrawl-follow-jsonl", "gocrawl-follow-sqlite", "gocrawl-follow-postgresql"}

// ratio is a column of the table: num's value over den's.
type ratio struct{ name, num, den string }

var ratios = []ratio{
	{"gocrawl/bare", "gocrawl", "bare"},
	{"follow/bare", "gocrawl-follow", "bare"},
	{"gocrawl/colly", "gocrawl", "colly"},
	{"follow/colly", "gocrawl-follow", "colly"},
	{"jobdir/memory", "gocrawl-follow-jobdir", "gocrawl-follow"},
	{"warc/memory", "gocrawl-follow-warc", "gocrawl-follow"},
	{"warc-store/memory", "gocrawl-follow-warc-store", "gocrawl-follow"},
	{"spill/nospill", "gocrawl-follow", "gocrawl-follow-nospill"},
	{"fasthttp/bare", "bare-fasthttp", "bare"},
	{"follow-fasthttp/colly", "gocrawl-follow-fasthttp", "colly"},
	{"sqlite/jsonl", "gocrawl-follow-sqlite", "gocrawl-follow-jsonl"},
	{"postgresql/jsonl", "gocrawl-follow-postgresql", "gocrawl-follow-jsonl"},
}

// printTable prints the variants and ratios that have a value in some row.
func printTable(w io.Writer, rows []row) {
	var cols []string
	for _, v := range variantOrder {
		if slices.ContainsFunc(rows, func(r row) bool { _, ok := r.values[v]; return ok }) {
			cols = append(cols, v)
		}
	}
	var rcols []ratio
	for _, q := range ratios {
		if slices.ContainsFunc(rows, func(r row) bool {
			_, n := r.values[q.num]
			_, d := r.values[q.den]
			return r.ratio && n && d
		}) {
			rcols = append(rcols, q)
		}
	}
	width := func(s string) int { return max(9, len(s)) }
	fmt.Fprintf(w, "%-9s %-30s", "scenario", "metric")
	for _, c := range cols {
		fmt.Fprintf(w, " %*s", width(c), c)
	}
	for _, q := range rcols {
		fmt.Fprintf(w, " %*s", width(q.name), q.name)
	}
	fmt.Fprintln(w, "  target")
	for _, r := range rows {
		fmt.Fprintf(w, "%-9s %-30s", r.scenario, r.metric)
		for _, c := range cols {
			cell := "-"
			if x, ok := r.values[c]; ok {
				cell = num(x)
			}
			fmt.Fprintf(w, " %*s", width(c), cell)
		}
		for _, q := range rcols {
			cell := "-"
			n, nok := r.values[q.num]
			d, dok := r.values[q.den]
			if r.ratio && nok && dok && d != 0 {
				cell = fmt.Sprintf("%.2fx", n/d)
			}
			fmt.Fprintf(w, " %*s", width(q.name), cell)
		}
		fmt.Fprintf(w, "  %s\n", r.target)
	}
}

func num(x float64) string {
	switch {
	case x == float64(int64(x)) && x < 1e6:
		return fmt.Sprintf("%d", int64(x))
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.3g", x)
	}
}

func writeCSV(path string, rows []row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, "scenario,metric,variant,value,target")
	for _, r := range rows {
		for _, v := range variantOrder {
			if x, ok := r.values[v]; ok {
				fmt.Fprintf(f, "%s,%q,%s,%g,%q\n", r.scenario, r.metric, v, x, r.target)
			}
		}
	}
	return f.Close()
}

// writeRSSCurves writes the memory curves of the runs that recorded one
// (S1M) as CSV; nothing when none did.
func writeRSSCurves(path string, runs []*run) error {
	var lines []string
	for _, r := range runs {
		for _, p := range r.result.RSS {
			lines = append(lines, fmt.Sprintf("%s,%s,%d,%.1f,%.1f,%.1f,%.1f", r.sc.Name, r.variant.Name, p.Pages, p.Seconds, p.RSSMB, p.HeapMB, p.LiveMB))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	out := "scenario,variant,pages,seconds,rss_mb,heap_inuse_mb,heap_live_mb\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "memory curves:", path)
	return nil
}
