// Command broad runs a broad-crawl scenario (S4-broad, S4-broad-small,
// S4-broad-10k; see bench/scenario/broad.go) and reports it from the
// server side.
//
// It serves the scenario's hosts itself, one listener per host on its own
// loopback address (127.1.x.y, one port for all: Linux routes the whole
// of 127.0.0.0/8 to the loopback interface), and runs the crawler under
// test in its own process (bench/cmd/runner), whose CPU time and peak RSS
// it reads from the process's rusage. The server records every request's
// arrival per host, the 429s it sent and the requests that arrived inside
// the Retry-After they announced, and counts the connections it accepted.
//
//	bench/broad.sh                                   # S4-broad, gocrawl
//	bench/broad.sh -scenario S4-broad-small -variant colly
//	bench/broad.sh -variant gocrawl-follow           # the built-in follow spider
//	bench/broad.sh -scenario S4-broad-10k -nofile 1024
//	bench/broad.sh -scenario S4-broad-small -workers 3
//	bench/broad.sh -scenario S4-broad-small -workers 3 -only-workers
//
// With -workers N it crawls the scenario twice, each time on a fresh site:
// by one process, then by N runner processes that are the workers of one
// job in a redis-server it starts on a free loopback port (REDIS_URL). The
// second report sums the workers' CPU time, compares its time to the last
// 200 with the first one's, and counts the Redis round trips twice: by the
// workers (a go-redis hook in each runner: a command sent alone, a script
// call included, is one, a pipeline is one) and by the server (its read
// events on client sockets, INFO stats total_reads_processed: one per
// request it reads, more for a request over its 16 KB read size).
// -only-workers skips the one-process crawl (the report then has no
// comparison with it).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

func main() {
	name := flag.String("scenario", "S4-broad", "broad scenario: S4-broad (2,000 hosts x 50 pages), S4-broad-small (500 x 20), S4-broad-10k (10,000 x 20)")
	variant := flag.String("variant", "gocrawl", "crawler variant: gocrawl (a spider that follows every a[href] of a parsed page), gocrawl-follow (the built-in follow spider: links scanned without a tree) or colly")
	bin := flag.String("bin", "", "folder of the runner binary (default: this program's folder)")
	timeout := flag.Duration("timeout", 600*time.Second, "stop the crawler after this long")
	nofile := flag.Int("nofile", 0, "run the crawler under ulimit -n N (0: the limit in force)")
	workers := flag.Int("workers", 0, "also crawl the same scenario with this many worker processes sharing one Redis (REDIS_URL; redis-server is started on a free loopback port), after the one-process crawl, and compare")
	onlyWorkers := flag.Bool("only-workers", false, "with -workers: skip the one-process crawl (no comparison with it)")
	out := flag.String("json", "", "append the report as a JSON line to this file")
	dumpTo := flag.String("dump", "", "write every host's arrivals (seconds from the start, robots.txt, new connection, refused) to this file as JSON lines, one host a line")
	runnerArgs := flag.String("runner-args", "", "more flags for the crawler (bench/cmd/runner), space-separated: \"-cpuprofile cpu.pprof -heapprofile heap.pprof -heapprofile-at 90000\"")
	flag.Parse()
	if err := run(*name, *variant, *bin, *timeout, *nofile, *workers, *onlyWorkers, *out, *dumpTo, strings.Fields(*runnerArgs)); err != nil {
		fmt.Fprintln(os.Stderr, "broad:", err)
		os.Exit(1)
	}
}

func run(name, variant, bin string, timeout time.Duration, nofile, workers int, onlyWorkers bool, out, dumpTo string, extra []string) error {
	sc, err := scenario.Find(name)
	if err != nil {
		return err
	}
	if sc.Broad == nil {
		return fmt.Errorf("scenario %s is not a broad crawl (run it with bench/run.sh)", name)
	}
	v, err := sc.Variant(variant)
	if err != nil {
		return err
	}
	if workers < 0 {
		return fmt.Errorf("-workers %d: want 0 (one process, no Redis) or more", workers)
	}
	if workers > 0 && v.Crawler != "gocrawl" {
		return fmt.Errorf("-workers: only the gocrawl variant crawls as workers of one Redis job, not %s", variant)
	}
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		bin = filepath.Dir(exe)
	}
	if onlyWorkers && workers == 0 {
		return fmt.Errorf("-only-workers needs -workers N")
	}
	var r Report
	if !onlyWorkers {
		if r, err = crawl(sc, variant, bin, timeout, nofile, 1, nil, dumpTo, extra); err != nil {
			return err
		}
		if err := emit(r, out); err != nil {
			return err
		}
	}
	if workers == 0 {
		return nil
	}
	// The same crawl again, by workers sharing one Redis, on a fresh site.
	rs, err := startRedis()
	if err != nil {
		return err
	}
	defer rs.Close()
	fmt.Printf("redis: %s, %d workers\n", rs.URL(), workers)
	w, err := crawl(sc, variant, bin, timeout, nofile, workers, rs, "", extra)
	if err != nil {
		return err
	}
	if r.LastOKSeconds > 0 {
		w.VsOneProcess = w.LastOKSeconds / r.LastOKSeconds
	}
	return emit(w, out)
}

// emit prints r and appends it to the JSON lines file out.
func emit(r Report, out string) error {
	r.print(os.Stdout)
	if out == "" {
		return nil
	}
	fj, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer fj.Close()
	return json.NewEncoder(fj).Encode(r)
}

// crawl serves a fresh site of the scenario and crawls it with n runner
// processes: one alone (rs nil), or n workers of one job in rs. The
// report sums the processes' CPU time and gives the largest peak RSS.
// With dumpTo, every host's arrivals are written there (-dump).
func crawl(sc scenario.Scenario, variant, bin string, timeout time.Duration, nofile, n int, rs *redisServer, dumpTo string, extra []string) (Report, error) {
	var r Report
	s, err := startSite(*sc.Broad)
	if err != nil {
		return r, err
	}
	defer s.Close()
	urls, err := json.Marshal(s.URLs())
	if err != nil {
		return r, err
	}
	f, err := os.CreateTemp("", "gocrawl-broad-urls-*.json")
	if err != nil {
		return r, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(urls); err != nil {
		return r, err
	}
	f.Close()

	args := []string{"-scenario", sc.Name, "-variant", variant, "-urls-file", f.Name()}
	if v, _ := sc.Variant(variant); v.Crawler == "gocrawl" {
		// gocrawl stops itself a little before the limit, so that it
		// still reports its responses and errors.
		args = append(args, "-close-after", strconv.FormatFloat(max(1, (timeout-10*time.Second).Seconds()), 'f', 0, 64))
	}
	if rs != nil {
		args = append(args, "-redis-url", rs.URL(), "-redis-job", "broad")
	}
	args = append(args, extra...)
	runner := filepath.Join(bin, "runner")
	var before redisCounters
	var beforeCmds map[string]int64
	if rs != nil {
		if before, err = rs.counters(); err != nil {
			return r, err
		}
		if beforeCmds, err = rs.commandStats(); err != nil {
			return r, err
		}
	}
	type proc struct {
		cmd *exec.Cmd
		res chan json.RawMessage
	}
	procs := make([]proc, n)
	start := time.Now()
	for i := range procs {
		cmd := exec.Command(runner, args...)
		if nofile > 0 {
			// The shell sets the limit and becomes the runner (exec): the
			// rusage read below is the runner's.
			cmd = exec.Command("sh", append([]string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(nofile), runner}, args...)...)
		}
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return r, err
		}
		if err := cmd.Start(); err != nil {
			for _, p := range procs[:i] {
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
			}
			return r, err
		}
		res := make(chan json.RawMessage, 1)
		go func() {
			var m json.RawMessage
			_ = json.NewDecoder(stdout).Decode(&m)
			res <- m
		}()
		procs[i] = proc{cmd, res}
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		timedOut.Store(true)
		for _, p := range procs {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
		}
	})
	results := make([]json.RawMessage, n)
	for i, p := range procs {
		results[i] = <-p.res
		if werr := p.cmd.Wait(); werr != nil && !timedOut.Load() {
			var ee *exec.ExitError
			if !errors.As(werr, &ee) {
				return r, werr
			}
			fmt.Fprintf(os.Stderr, "broad: crawler %d failed: %v\n", i+1, werr)
		}
	}
	wall := time.Since(start)
	timer.Stop()
	r = s.report(start)
	if dumpTo != "" {
		if err := s.dump(dumpTo, start); err != nil {
			return r, err
		}
	}
	r.Scenario, r.Variant, r.TimedOut, r.NoFile = sc.Name, variant, timedOut.Load(), nofile
	r.WallSeconds = wall.Seconds()
	for _, p := range procs {
		if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.CPUSeconds += time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)).Seconds()
			r.CPUSystemSeconds += time.Duration(syscall.TimevalToNsec(ru.Stime)).Seconds()
			r.PeakRSSMB = max(r.PeakRSSMB, float64(ru.Maxrss)/1024) // KiB on Linux
		}
	}
	if r.Pages > 0 {
		r.CPUPerPage = 1000 * r.CPUSeconds / float64(r.Pages)
	}
	if rs != nil {
		after, err := rs.counters()
		if err != nil {
			return r, err
		}
		afterCmds, err := rs.commandStats()
		if err != nil {
			return r, err
		}
		// The INFO calls of this function are not the crawl's: two
		// reads and two commands (the first pair is counted by the
		// second read, the second pair by neither).
		r.Workers = n
		r.RedisRoundTrips = after.Reads - before.Reads - 2
		r.RedisCommands = after.Commands - before.Commands - 2
		r.RedisCPUSeconds = after.CPU - before.CPU
		r.RedisCommandCalls = map[string]int64{}
		for k, v := range afterCmds {
			if d := v - beforeCmds[k]; d > 0 && k != "info" {
				r.RedisCommandCalls[k] = d
			}
		}
		if r.Pages > 0 {
			r.RoundTripsPerPage = float64(r.RedisRoundTrips) / float64(r.Pages)
		}
	}
	if rs != nil {
		// The workers' own count: one per command sent alone, one per
		// pipeline (bench/cmd/runner's go-redis hook).
		for _, m := range results {
			var w struct {
				Redis *struct {
					RoundTrips int64 `json:"round_trips"`
					Dials      int64 `json:"dials"`
				} `json:"redis"`
			}
			if len(m) > 0 && json.Unmarshal(m, &w) == nil && w.Redis != nil {
				r.ClientRoundTrips += w.Redis.RoundTrips
				r.RedisDials += w.Redis.Dials
			}
		}
		if r.Pages > 0 {
			r.ClientRoundTripsPerPage = float64(r.ClientRoundTrips) / float64(r.Pages)
		}
	}
	for i, m := range results {
		if len(m) > 0 {
			fmt.Printf("  runner %d              %s\n", i+1, m)
		}
	}
	return r, nil
}
