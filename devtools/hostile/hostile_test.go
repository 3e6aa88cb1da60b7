package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/gocrawlbin"
)

// binary is the gocrawl command built by TestMain.
var binary string

// TestMain builds the gocrawl binary once: every crawl of these tests runs
// in a child process, so that its peak memory can be read from outside.
func TestMain(m *testing.M) { gocrawlbin.Main(m, &binary) }

// run is one finished child crawl.
type run struct {
	code           int
	stdout, stderr string
	maxRSS         int64 // peak resident memory, bytes
	elapsed        time.Duration
	stats          map[string]float64 // from STATS_DUMP_FILE
	dir            string
}

// newServer starts a hostile server closed with the test.
func newServer(t *testing.T, addr string, bombSize int64) *Server {
	t.Helper()
	s, err := New(addr, bombSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// gocrawl runs the binary with args in a fresh directory, killing it after
// timeout (a failure), and returns what it did. Settings that keep the
// output small and the stats readable are added first, so args override
// them.
func gocrawl(t *testing.T, timeout time.Duration, args ...string) run {
	t.Helper()
	return gocrawlIn(t, t.TempDir(), timeout, nil, args...)
}

// gocrawlIn is gocrawl in dir; during, when not nil, runs on its own
// goroutine once the process has started (to send it signals).
func gocrawlIn(t *testing.T, dir string, timeout time.Duration, during func(*os.Process), args ...string) run {
	t.Helper()
	statsFile := filepath.Join(dir, "stats.json")
	if len(args) > 0 && args[0] == "run" {
		base := []string{"-s", "LOG_LEVEL=INFO", "-s", "LOG_FORMAT=json", "-s", "STATS_DUMP=false",
			"-s", "STATS_DUMP_FILE=" + statsFile, "-s", "LOGSTATS_INTERVAL=0"}
		args = append(append(args[:2:2], base...), args[2:]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := gocrawlbin.Command(ctx, binary, dir, nil, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Start()
	var hwm int64
	if err == nil {
		if during != nil {
			go during(cmd.Process)
		}
		stop, polled := make(chan struct{}), make(chan int64)
		go func() { polled <- pollHWM(cmd.Process.Pid, stop) }()
		err = cmd.Wait()
		close(stop)
		hwm = <-polled
	}
	r := run{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start), dir: dir}
	if ctx.Err() != nil {
		t.Fatalf("gocrawl %s: still running after %v; killed\nstderr:\n%s", strings.Join(args, " "), timeout, tail(r.stderr))
	}
	if cmd.ProcessState == nil {
		t.Fatalf("gocrawl %s: %v", strings.Join(args, " "), err)
	}
	r.code = cmd.ProcessState.ExitCode()
	r.maxRSS = hwm
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && hwm == 0 {
		r.maxRSS = int64(ru.Maxrss) << 10 // kilobytes on Linux
	}
	if data, err := os.ReadFile(statsFile); err == nil {
		var doc struct {
			Stats map[string]float64 `json:"stats"`
		}
		if json.Unmarshal(data, &doc) == nil {
			r.stats = doc.Stats
		}
	}
	return r
}

// pollHWM returns the highest VmHWM (peak resident memory) read from
// /proc/pid/status every 2 ms until stop is closed, in bytes; 0 when it
// could never be read. The child's rusage cannot be used: Go starts
// children with vfork (CLONE_VM), and Linux carries the parent's peak into
// the child's ru_maxrss at exec, so a child smaller than this test process
// (large under the race detector) would report the test's peak. VmHWM
// belongs to the child's own address space; it only grows, so the last
// read covers everything but the last 2 ms before exit.
func pollHWM(pid int, stop <-chan struct{}) int64 {
	path := fmt.Sprintf("/proc/%d/status", pid)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var peak int64
	for {
		if data, err := os.ReadFile(path); err == nil {
			for line := range strings.Lines(string(data)) {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					var kb int64
					if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err == nil {
						peak = max(peak, kb<<10)
					}
				}
			}
		}
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

const mib = 1 << 20

func mb(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/mib) }
