package redisjob_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// outage runs one worker against a site of 2 hosts x pages (0.1 s delay)
// on its own Redis server, and kills the server once 30% of the pages
// are fetched. It returns the worker, the site, and when Redis died.
func outage(t *testing.T, aof bool, pages int, extra ...string) (*proc, *simsite.Server, *redistest.Server, time.Time) {
	t.Helper()
	rs := redistest.Start(t, redistest.Options{AppendOnly: aof})
	srv := site(t, 2, pages)
	args := []string{"run", "follow", "-a", "start_urls=" + strings.Join(starts(srv), ","), "-O", "items.jsonl"}
	for _, kv := range append([]string{"REDIS_URL=" + rs.URL(), "JOB=outage", "ROBOTSTXT_OBEY=false", "DOWNLOAD_DELAY=0.1",
		"RANDOMIZE_DOWNLOAD_DELAY=false", "LOG_LEVEL=INFO", "LOGSTATS_INTERVAL=0", "STATS_DUMP=false", "PROGRESS_DISPLAY=off"}, extra...) {
		args = append(args, "-s", kv)
	}
	w := start(t, "worker", t.TempDir(), args...)
	deadline := time.Now().Add(time.Minute)
	for len(srv.Records()) < 2*pages*3/10 {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not get 30%% through the site:\n%s", w.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	rs.Kill()
	return w, srv, rs, time.Now()
}

// Redis goes away mid-crawl and comes back with its data (append-only
// file): the worker starts nothing while it is away, says so, and resumes;
// the crawl finishes with every page fetched.
func TestRedisOutageResumes(t *testing.T) {
	w, srv, rs, died := outage(t, true, 50)
	time.Sleep(3 * time.Second)
	back := time.Now()
	rs.Restart(t)
	if code := w.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("worker exited %d after Redis came back, want 0:\n%s", code, w.out.String())
	}
	out := w.out.String()
	for _, want := range []string{"Redis unavailable", "Redis is back"} {
		if !strings.Contains(out, want) {
			t.Errorf("the worker's log lacks %q:\n%s", want, out)
		}
	}
	ok := map[string]int{}
	for _, r := range srv.Records() {
		// Requests already on their way when Redis died may still start
		// at the server just after (dispatch, slow on a loaded machine);
		// none may start later.
		if r.Start.After(died.Add(time.Second)) && r.Start.Before(back) {
			t.Errorf("%s%s started %v after Redis died, before it was back", r.Host, r.Path, r.Start.Sub(died))
		}
		if r.Status == http.StatusOK {
			ok[r.Host+r.Path]++
		}
	}
	for _, h := range srv.Hosts() {
		for i := range 50 {
			if ok[h+simsite.PagePath(i)] == 0 {
				t.Errorf("%s%s never fetched", h, simsite.PagePath(i))
			}
		}
	}
}

// Redis stays away longer than REDIS_UNAVAILABLE_TIMEOUT: the worker exits
// with status 1, naming the address.
func TestRedisUnavailableTimeout(t *testing.T) {
	w, _, rs, died := outage(t, false, 50, "REDIS_UNAVAILABLE_TIMEOUT=1")
	code := w.wait(t, time.Minute)
	if code != 1 {
		t.Fatalf("worker exited %d with Redis gone, want 1:\n%s", code, w.out.String())
	}
	if took := time.Since(died); took > 20*time.Second {
		t.Errorf("the worker took %v to give up, REDIS_UNAVAILABLE_TIMEOUT is 1 s", took)
	}
	if out := w.out.String(); !strings.Contains(out, rs.Addr) || !strings.Contains(out, "REDIS_UNAVAILABLE_TIMEOUT") {
		t.Errorf("the worker's log does not name %s and REDIS_UNAVAILABLE_TIMEOUT:\n%s", rs.Addr, out)
	}
}

// Redis comes back empty (no persistence): the job's frontier is lost; the
// worker notices at its next heartbeat and exits 1 saying so.
func TestRedisRestartWithoutPersistence(t *testing.T) {
	w, _, rs, _ := outage(t, false, 50, "REDIS_LEASE_TTL=1")
	time.Sleep(200 * time.Millisecond)
	rs.Restart(t)
	if code := w.wait(t, time.Minute); code != 1 {
		t.Fatalf("worker exited %d after Redis lost the job, want 1:\n%s", code, w.out.String())
	}
	if out := w.out.String(); !strings.Contains(out, "gone from Redis") {
		t.Errorf("the worker's log does not say the job is gone:\n%s", out)
	}
}

// The command line refuses what cannot work, with exit status 2, before
// anything is fetched.
func TestCommandLineRefusals(t *testing.T) {
	url := redistest.Shared(t).URL()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"jobdir", []string{"-s", "REDIS_URL=" + url, "-s", "JOBDIR=" + dir + "/job"}, "JOBDIR and REDIS_URL cannot be used together"},
		{"unreachable", []string{"-s", "REDIS_URL=redis://127.0.0.1:1/0"}, "cannot reach Redis at 127.0.0.1:1"},
		{"scope manager", []string{"-s", "REDIS_URL=" + url, "-s", "THROTTLING_SCOPES={h.test: {manager: Nope}}"}, "Nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-s", "JOB=" + nextJob()}, tc.args...)
			p := start(t, "gocrawl", dir, args...)
			if code := p.wait(t, time.Minute); code != 2 || !strings.Contains(p.out.String(), tc.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, p.out.String(), tc.want)
			}
		})
	}
}

// jobs inspect --redis and jobs delete --redis.
func TestJobsCommands(t *testing.T) {
	url := redistest.Shared(t).URL()
	srv := site(t, 1, 10)
	job := nextJob()
	dir := t.TempDir()
	run := start(t, "run", dir, "run", "follow", "-a", "start_urls="+srv.URL("h0")+"/", "-s", "REDIS_URL="+url, "-s", "JOB="+job,
		"-s", "ROBOTSTXT_OBEY=false", "-s", "STATS_DUMP=false", "-s", "LOG_LEVEL=ERROR")
	if code := run.wait(t, time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%s", code, run.out.String())
	}
	insp := start(t, "inspect", dir, "jobs", "inspect", "--redis", url, job)
	if code := insp.wait(t, time.Minute); code != 0 {
		t.Fatalf("inspect exited %d:\n%s", code, insp.out.String())
	}
	for _, want := range []string{"spider:     follow", "seeding:    done", "0 queued", "10 fingerprints", "downloader/response_count", "Live workers: 0"} {
		if !strings.Contains(insp.out.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, insp.out.String())
		}
	}
	del := start(t, "delete", dir, "jobs", "delete", "--redis", url, job)
	if code := del.wait(t, time.Minute); code != 0 || !strings.Contains(del.out.String(), fmt.Sprintf("deleted job %s", job)) {
		t.Fatalf("delete exited %d:\n%s", code, del.out.String())
	}
	again := start(t, "inspect", dir, "jobs", "inspect", "--redis", url, job)
	if code := again.wait(t, time.Minute); code != 2 || !strings.Contains(again.out.String(), "no such job") {
		t.Fatalf("inspect of a deleted job exited %d:\n%s", code, again.out.String())
	}
}
