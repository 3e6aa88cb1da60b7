package hostile

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The first Ctrl-C stops waiting at once. Requests
// waiting out a delay or robots.txt are not started, in-flight downloads
// get SHUTDOWN_GRACE, and what was not done stays queued for a resume.
// Real SIGINTs to the gocrawl binary.

// interrupt returns a hook for gocrawlIn that sends SIGINT once cond holds
// (polled), and a function returning when it was sent.
func interrupt(t *testing.T, cond func() bool) (func(*os.Process), func() time.Time) {
	var mu sync.Mutex
	var sent time.Time
	hook := func(p *os.Process) {
		deadline := time.Now().Add(30 * time.Second)
		for !cond() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // let the crawl settle into its wait
		mu.Lock()
		sent = time.Now()
		mu.Unlock()
		_ = p.Signal(os.Interrupt)
	}
	return hook, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

func TestCtrlCDuringALongDelay(t *testing.T) {
	srv := newServer(t, "", 0)
	dir := t.TempDir()
	// The first request is admitted, then waits for robots.txt, whose
	// fetch waits out the host's delay (1000 s): the crawl is all waiting.
	start := time.Now()
	hook, sentAt := interrupt(t, func() bool { return time.Since(start) > time.Second })
	r := gocrawlIn(t, dir, time.Minute, hook, "run", "follow",
		"-a", "start_urls="+srv.URL+"/page/0?links=1_2_3", "-s", "DOWNLOAD_DELAY=1000",
		"-s", "JOBDIR=job", "-o", "items.jsonl")
	took := start.Add(r.elapsed).Sub(sentAt())
	t.Logf("exit %d, %v after SIGINT", r.code, took)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	if took > 3*time.Second {
		t.Errorf("the crawl ended %v after SIGINT; want it to stop waiting at once", took)
	}
	if !strings.Contains(r.stderr, `"reason":"shutdown"`) {
		t.Errorf("no shutdown in the log:\n%s", tail(r.stderr))
	}
	if n := srv.Count("/page/1") + srv.Count("/page/2") + srv.Count("/page/3"); n != 0 {
		t.Errorf("%d requests were sent after the stop", n)
	}
	// The queue was saved: resuming without a delay fetches the rest.
	r = gocrawlIn(t, dir, time.Minute, nil, "run", "follow",
		"-a", "start_urls="+srv.URL+"/page/0?links=1_2_3", "-s", "DOWNLOAD_DELAY=0",
		"-s", "JOBDIR=job", "-o", "items.jsonl")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, tail(r.stderr))
	}
	for _, p := range []string{"/page/1", "/page/2", "/page/3"} {
		if srv.Count(p) != 1 {
			t.Errorf("%s fetched %d times after the resume, want 1 (hits %v)", p, srv.Count(p), srv.Hits())
		}
	}
	if srv.Count("/page/0") != 1 {
		t.Errorf("/page/0 fetched %d times, want 1", srv.Count("/page/0"))
	}
	items, _ := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	if n := strings.Count(string(items), "\n"); n != 4 {
		t.Errorf("items.jsonl holds %d items, want 4:\n%s", n, items)
	}
}

func TestCtrlCWhileRobotsTxtHangs(t *testing.T) {
	srv := newServer(t, "", 0)
	srv.SetRobots(func(w http.ResponseWriter, r *http.Request) {
		select { // hangs until the client gives up
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	hook, sentAt := interrupt(t, func() bool { return srv.Count("/robots.txt") > 0 })
	start := time.Now()
	r := gocrawlIn(t, t.TempDir(), time.Minute, hook, "run", "follow",
		"-a", "start_urls="+srv.URL+"/page/0", "-s", "DOWNLOAD_TIMEOUT=10", "-s", "SHUTDOWN_GRACE=1")
	took := start.Add(r.elapsed).Sub(sentAt())
	t.Logf("exit %d, %v after SIGINT", r.code, took)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	// The request waiting for robots.txt gives up at once; the robots.txt
	// download itself gets SHUTDOWN_GRACE (1 s).
	if took > 3*time.Second {
		t.Errorf("the crawl ended %v after SIGINT; want about SHUTDOWN_GRACE", took)
	}
	if n := srv.Count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times: retried during the stop?", n)
	}
}

// TestCtrlCGraceCutsSlowDownloads: a download still running SHUTDOWN_GRACE
// after SIGINT is cancelled and kept queued; the resumed job fetches it.
func TestCtrlCGraceCutsSlowDownloads(t *testing.T) {
	srv := newServer(t, "", 0)
	dir := t.TempDir()
	hook, sentAt := interrupt(t, func() bool { return srv.Count("/slow") > 0 })
	start := time.Now()
	args := []string{"run", "follow", "-a", "start_urls=" + srv.URL + "/slow?d=4", "-s", "ROBOTSTXT_OBEY=false",
		"-s", "SHUTDOWN_GRACE=1", "-s", "JOBDIR=job", "-o", "items.jsonl"}
	r := gocrawlIn(t, dir, time.Minute, hook, args...)
	took := start.Add(r.elapsed).Sub(sentAt())
	t.Logf("exit %d, %v after SIGINT", r.code, took)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	if took < 900*time.Millisecond || took > 3*time.Second {
		t.Errorf("the crawl ended %v after SIGINT; want SHUTDOWN_GRACE (1 s) plus a little", took)
	}
	if got := r.stats["engine/kept_queued_on_stop"]; got != 1 {
		t.Errorf("engine/kept_queued_on_stop = %v, want 1", got)
	}
	if got := r.stats["downloader/exception_count"]; got != 0 {
		t.Errorf("the cut download counted as a download error (%v)", got)
	}
	r = gocrawlIn(t, dir, time.Minute, nil, args...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, tail(r.stderr))
	}
	items, _ := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	if !strings.Contains(string(items), `"title":"slow"`) || srv.Count("/slow") != 2 {
		t.Errorf("the cut request was not fetched on resume: hits %v, items %s", srv.Hits(), items)
	}
}
