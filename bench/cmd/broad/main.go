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
//	bench/broad.sh -scenario S4-broad-10k -nofile 1024
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
	"syscall"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

func main() {
	name := flag.String("scenario", "S4-broad", "broad scenario: S4-broad (2,000 hosts x 50 pages), S4-broad-small (500 x 20), S4-broad-10k (10,000 x 20)")
	variant := flag.String("variant", "gocrawl", "crawler variant: gocrawl or colly")
	bin := flag.String("bin", "", "folder of the runner binary (default: this program's folder)")
	timeout := flag.Duration("timeout", 600*time.Second, "stop the crawler after this long")
	nofile := flag.Int("nofile", 0, "run the crawler under ulimit -n N (0: the limit in force)")
	out := flag.String("json", "", "append the report as a JSON line to this file")
	runnerArgs := flag.String("runner-args", "", "more flags for the crawler (bench/cmd/runner), space-separated: \"-cpuprofile cpu.pprof -heapprofile heap.pprof -heapprofile-at 90000\"")
	flag.Parse()
	if err := run(*name, *variant, *bin, *timeout, *nofile, *out, strings.Fields(*runnerArgs)); err != nil {
		fmt.Fprintln(os.Stderr, "broad:", err)
		os.Exit(1)
	}
}

func run(name, variant, bin string, timeout time.Duration, nofile int, out string, extra []string) error {
	sc, err := scenario.Find(name)
	if err != nil {
		return err
	}
	if sc.Broad == nil {
		return fmt.Errorf("scenario %s is not a broad crawl (run it with bench/run.sh)", name)
	}
	if _, err := sc.Variant(variant); err != nil {
		return err
	}
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		bin = filepath.Dir(exe)
	}
	s, err := startSite(*sc.Broad)
	if err != nil {
		return err
	}
	defer s.Close()
	urls, err := json.Marshal(s.URLs())
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "gocrawl-broad-urls-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(urls); err != nil {
		return err
	}
	f.Close()

	args := []string{"-scenario", name, "-variant", variant, "-urls-file", f.Name()}
	if variant == "gocrawl" {
		// gocrawl stops itself a little before the limit, so that it
		// still reports its responses and errors.
		args = append(args, "-close-after", strconv.FormatFloat(max(1, (timeout-10*time.Second).Seconds()), 'f', 0, 64))
	}
	args = append(args, extra...)
	runner := filepath.Join(bin, "runner")
	cmd := exec.Command(runner, args...)
	if nofile > 0 {
		// The shell sets the limit and becomes the runner (exec): the
		// rusage read below is the runner's.
		cmd = exec.Command("sh", append([]string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(nofile), runner}, args...)...)
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	var res json.RawMessage
	decoded := make(chan error, 1)
	go func() { decoded <- json.NewDecoder(stdout).Decode(&res) }()
	timedOut := false
	timer := time.AfterFunc(timeout, func() {
		timedOut = true
		_ = cmd.Process.Signal(syscall.SIGKILL)
	})
	<-decoded
	werr := cmd.Wait()
	wall := time.Since(start)
	timer.Stop()
	if werr != nil && !timedOut {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return werr
		}
		fmt.Fprintln(os.Stderr, "broad: the crawler failed:", werr)
	}
	r := s.report(start)
	r.Scenario, r.Variant, r.TimedOut, r.NoFile = name, variant, timedOut, nofile
	r.WallSeconds = wall.Seconds()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPUSeconds = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)).Seconds()
		r.PeakRSSMB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	if r.Pages > 0 {
		r.CPUPerPage = 1000 * r.CPUSeconds / float64(r.Pages)
	}
	r.print(os.Stdout)
	if len(res) > 0 {
		fmt.Printf("  runner                %s\n", res)
	}
	if out != "" {
		fj, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer fj.Close()
		return json.NewEncoder(fj).Encode(r)
	}
	return nil
}
