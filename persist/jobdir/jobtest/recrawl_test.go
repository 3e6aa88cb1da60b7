package jobtest

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/changesite"
)

// TestRecrawlKillAndResume recrawls a finished job, SIGKILLs the recrawl
// a few times and resumes it: every page is revisited with its validators
// (a 304 each, the site is unchanged), the resumed runs stay in the same
// round, and only the revisits in flight at a kill are repeated.
func TestRecrawlKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real crawls; skipped with -short")
	}
	const pages = 2000
	site := changesite.New(pages, changesite.ETagAndLastModified)
	site.Latency = 5 * time.Millisecond
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := t.TempDir()
	run := func(extra ...string) *exec.Cmd {
		args := []string{"run", "site",
			"-s", "JOBDIR=" + filepath.Join(dir, "job"),
			"-s", "ROBOTSTXT_OBEY=false", "-s", "LOG_LEVEL=ERROR", "-s", "STATS_DUMP=false",
			"-s", "DOWNLOAD_DELAY=0", "-s", "DOWNLOAD_TIMEOUT=20",
			"-s", fmt.Sprintf("CONCURRENT_REQUESTS=%d", concurrency),
			"-s", fmt.Sprintf("CONCURRENT_REQUESTS_PER_DOMAIN=%d", concurrency),
		}
		cmd := exec.Command(os.Args[0], append(args, extra...)...)
		cmd.Env = append(os.Environ(), childEnv+"="+srv.URL+"/")
		return cmd
	}
	if err := run().Run(); exitCode(err) != 0 {
		t.Fatalf("first crawl: %v", err)
	}
	if n := site.Requests.Load(); n != pages+1 {
		t.Fatalf("first crawl: %d requests, want %d", n, pages+1)
	}
	site.Reset()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	kills := 0
	for range 3 {
		start := site.Requests.Load()
		cmd := run("-s", "RECRAWL_ENABLED=true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		target := start + 100 + int64(rnd.IntN(400))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		killed := false
	wait:
		for {
			select {
			case err := <-done:
				if exitCode(err) != 0 {
					t.Fatalf("recrawl run ended with %v", err)
				}
				break wait
			case <-time.After(5 * time.Millisecond):
				if site.Requests.Load() >= target {
					cmd.Process.Signal(syscall.SIGKILL)
					<-done
					killed, kills = true, kills+1
					break wait
				}
			}
		}
		if !killed {
			break
		}
	}
	if err := run("-s", "RECRAWL_ENABLED=true").Run(); exitCode(err) != 0 {
		t.Fatalf("final recrawl run: %v", err)
	}
	hits := site.Hits()
	dups := 0
	for i := range pages {
		switch n := hits[fmt.Sprintf("/p/%d", i)]; {
		case n == 0:
			t.Errorf("page %d was not revisited", i)
		case n > 1:
			dups += n - 1
		}
	}
	if c, r := site.Conditional.Load(), site.Requests.Load(); c < int64(pages) {
		t.Errorf("%d of %d revisits were conditional, want every page's", c, r)
	}
	// A kill repeats only the revisits it caught unacknowledged: those
	// downloading or in their callbacks (at most 2*concurrency+16, the
	// engine's cap on jobs between download and acknowledgement) and
	// those whose acknowledgement was still in Pebble's buffer (at most
	// 16 beyond them: Job.LimitUnsynced). The revisits queued and not
	// yet made are not queued again by the resumed run (their round
	// fingerprints were written with them), however far the seeding had
	// got.
	bound := kills * (2*concurrency + 16 + 16)
	t.Logf("%d kills, %d requests for %d pages: %d duplicates (bound %d), %d not modified", kills, site.Requests.Load(), pages, dups, bound, site.NotModified.Load())
	if dups > bound {
		t.Errorf("%d repeated revisits after %d kills, more than %d", dups, kills, bound)
	}
	// The round is over: another recrawl begins the next one.
	site.Reset()
	if err := run("-s", "RECRAWL_ENABLED=true").Run(); exitCode(err) != 0 {
		t.Fatalf("next round: %v", err)
	}
	if n := site.NotModified.Load(); n != pages {
		t.Errorf("the next round got %d 304s, want %d", n, pages)
	}
}
