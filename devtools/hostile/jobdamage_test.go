package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Damage to a job directory that Pebble repairs
// silently is said out loud: a cut write-ahead log (what was recovered,
// as of when) and an emptied state folder (refused).

// pausedJob runs a crawl of a 400-page tree with JOBDIR in dir and pauses
// it with SIGINT after 100 pages, leaving requests queued.
func pausedJob(t *testing.T, srv *Server, dir string) []string {
	args := []string{"run", "follow", "-a", fmt.Sprintf("start_urls=%s/tree/0?n=400&pad=200", srv.URL),
		"-s", "ROBOTSTXT_OBEY=false", "-s", "JOBDIR=job", "-s", "DOWNLOAD_DELAY=0.005", "-o", "items.jsonl"}
	hook, _ := interrupt(t, func() bool { return len(srv.Hits()) >= 100 })
	r := gocrawlIn(t, dir, time.Minute, hook, args...)
	if r.code != 0 {
		t.Fatalf("pause: exit %d\n%s", r.code, tail(r.stderr))
	}
	return args
}

// newestWAL returns the path of the job's newest write-ahead log.
func newestWAL(t *testing.T, dir string) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "job", "state", "*.log"))
	if len(logs) == 0 {
		t.Fatal("no write-ahead log in the job")
	}
	sort.Strings(logs)
	return logs[len(logs)-1]
}

func TestCutWriteAheadLogIsReported(t *testing.T) {
	srv := newServer(t, "", 0)
	dir := t.TempDir()
	args := pausedJob(t, srv, dir)
	wal := newestWAL(t, dir)
	st, _ := os.Stat(wal)
	if err := os.Truncate(wal, st.Size()/2); err != nil {
		t.Fatal(err)
	}

	r := gocrawlIn(t, dir, time.Minute, nil, "jobs", "inspect", "job")
	if r.code != 0 {
		t.Fatalf("inspect: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("jobs inspect:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "DAMAGE") || !strings.Contains(r.stdout, "the state is that of") {
		t.Errorf("jobs inspect does not report the cut log:\n%s", r.stdout)
	}

	r = gocrawlIn(t, dir, time.Minute, nil, args...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, tail(r.stderr))
	}
	if !strings.Contains(r.stderr, "JOBDIR was damaged") || !strings.Contains(r.stderr, "state_as_of") {
		t.Errorf("resuming did not say what was recovered:\n%s", tail(r.stderr))
	}
	// Remembered: inspect still says it after the resume, once.
	r = gocrawlIn(t, dir, time.Minute, nil, "jobs", "inspect", "job")
	if strings.Count(r.stdout, "DAMAGE") != 1 {
		t.Errorf("jobs inspect after the resume:\n%s", r.stdout)
	}
	// A clean pause and resume reports nothing. A server of its own: the
	// pause waits until the server has served 100 requests, which srv has
	// already done (the signal then came before the crawl was listening).
	dir2 := t.TempDir()
	args2 := pausedJob(t, newServer(t, "", 0), dir2)
	r = gocrawlIn(t, dir2, time.Minute, nil, args2...)
	if r.code != 0 || strings.Contains(r.stderr, "damaged") {
		t.Errorf("a clean resume: exit %d\n%s", r.code, tail(r.stderr))
	}
}

func TestEmptiedStateIsRefused(t *testing.T) {
	srv := newServer(t, "", 0)
	dir := t.TempDir()
	args := pausedJob(t, srv, dir)
	state := filepath.Join(dir, "job", "state")
	ents, _ := os.ReadDir(state)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(state, e.Name()))
	}
	r := gocrawlIn(t, dir, time.Minute, nil, args...)
	if r.code != 2 || !strings.Contains(r.stderr, "missing or empty") || !strings.Contains(r.stderr, "--fresh") {
		t.Fatalf("an emptied state folder: exit %d\n%s", r.code, tail(r.stderr))
	}
	// --fresh starts over on purpose.
	r = gocrawlIn(t, dir, time.Minute, nil, append(args, "--fresh")...)
	if r.code != 0 {
		t.Fatalf("--fresh: exit %d\n%s", r.code, tail(r.stderr))
	}
}
