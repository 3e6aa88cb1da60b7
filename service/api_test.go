package service_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestAPIEndToEnd checks a job's life through the API against a local
// site: refused jobs (400 naming the problem), the items streamed while
// the crawl runs, the log, stats, report and metrics once it finished.
func TestAPIEndToEnd(t *testing.T) {
	t.Parallel()
	st := newSite(t, 15, 3) // /p/0../p/2 answer at once, the rest wait
	sv := startServer(t, t.TempDir(), nil, "-s", "SERVE_MAX_BODY=2000")

	code, out := sv.call("GET", "/api/spiders", nil)
	if code != 200 || !strings.Contains(mustJSON(out), `"site"`) {
		t.Fatalf("GET /api/spiders: %d %v", code, out)
	}
	bad := []struct {
		name string
		body any
		code int
		want string // in the error
	}{
		{"unknown spider", map[string]any{"spider": "nope"}, 400, `unknown spider "nope"`},
		{"unknown setting", map[string]any{"spider": "site", "settings": map[string]any{"DOWNLOAD_DELAYY": 1}}, 400, "DOWNLOAD_DELAYY"},
		{"bad value", map[string]any{"spider": "site", "settings": map[string]any{"DOWNLOAD_DELAY": "soon"}}, 400, "DOWNLOAD_DELAY"},
		{"unknown argument", map[string]any{"spider": "site", "args": map[string]string{"colour": "red"}}, 400, "colour"},
		{"setting of the service", map[string]any{"spider": "site", "settings": map[string]any{"JOBDIR": "/tmp/x"}}, 400, "JOBDIR"},
		{"unknown field", map[string]any{"spider": "site", "priority": 3}, 400, "priority"},
		{"not JSON", "spider=site", 400, "request body"},
		{"too large", map[string]any{"spider": "site", "args": map[string]string{"start_urls": strings.Repeat("x", 3000)}}, 413, "SERVE_MAX_BODY"},
	}
	for _, tt := range bad {
		code, out := sv.call("POST", "/api/jobs", tt.body)
		if code != tt.code || !strings.Contains(out["error"].(string), tt.want) {
			t.Errorf("%s: %d %v, want %d naming %q", tt.name, code, out, tt.code, tt.want)
		}
	}
	if code, out := sv.call("POST", "/api/schedules", map[string]any{"spider": "site", "cron": "61 * * * *"}); code != 400 || !strings.Contains(out["error"].(string), "61 * * * *") {
		t.Errorf("malformed cron: %d %v", code, out)
	}

	id := sv.submit(st, map[string]any{"DOWNLOAD_DELAY": 0, "CONCURRENT_REQUESTS": 4, "DEFAULT_REQUEST_HEADERS": map[string]any{"X-Api-Key": "s3cret"}})
	// The items stream delivers the first pages' items while the crawl
	// waits at the gate: it cannot have ended.
	req, _ := http.NewRequest("GET", sv.url+"/api/jobs/"+id+"/items", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("items Content-Type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() {
		t.Fatalf("no item streamed: %v", lines.Err())
	}
	first := lines.Text()
	if j := sv.job(id); j["state"] != "running" {
		t.Fatalf("job %s while its crawl waits, want running", j["state"])
	}
	waitFor(t, "the live report", func() bool {
		code, page := sv.raw("GET", "/api/jobs/"+id+"/report", nil, "")
		return code == 200 && strings.Contains(string(page), "gocrawl report")
	})
	if got, _ := sv.call("GET", "/api/jobs?state=running&spider=site", nil); got != 200 {
		t.Fatalf("list: %d", got)
	}
	_, list := sv.call("GET", "/api/jobs?state=running", nil)
	if jobs := list["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["id"] != id {
		t.Errorf("running jobs: %v", list)
	}
	st.release()
	streamed := []string{first}
	for lines.Scan() {
		streamed = append(streamed, lines.Text())
	}
	j := sv.waitState(id, "finished")
	if len(streamed) != 15 {
		t.Errorf("the stream gave %d items, want 15 (one per page)", len(streamed))
	}
	urls := sv.items(id)
	slices.Sort(urls)
	if len(slices.Compact(urls)) != 15 {
		t.Errorf("items after the end: %d distinct, want 15: %v", len(urls), urls)
	}
	if j["exit_code"] != 0.0 || j["pid"] != nil {
		t.Errorf("finished job: %v", j)
	}
	if used := mustJSON(j["settings_used"]); !strings.Contains(used, `"CONCURRENT_REQUESTS"`) || !strings.Contains(used, "-s CONCURRENT_REQUESTS=4") {
		t.Errorf("settings_used lacks the job's setting with its origin: %s", used)
	}
	if shown := mustJSON(j); strings.Contains(shown, "s3cret") || !strings.Contains(shown, `X-Api-Key\":\"***`) {
		t.Errorf("the job's settings are not shown redacted: %s", shown)
	}
	// The finished job keeps its final figures, in its status and in the
	// job list.
	_, list = sv.call("GET", "/api/jobs?state=finished", nil)
	for _, v := range []any{j["result"], list["jobs"].([]any)[0].(map[string]any)["result"]} {
		r, _ := v.(map[string]any)
		if r == nil || r["reason"] != "finished" || r["pages"].(float64) < 15 || r["items"] != 15.0 || r["errors"] != 0.0 || r["duration_seconds"].(float64) <= 0 {
			t.Errorf("finished job's result: %v, want reason finished, 15 pages or more, 15 items, no error, a duration", v)
		}
	}
	if strings.Contains(mustJSON(list), "s3cret") {
		t.Errorf("the job list shows a secret: %s", mustJSON(list))
	}
	_, stats := sv.call("GET", "/api/jobs/"+id+"/stats", nil)
	if n := stats["stats"].(map[string]any)["item_scraped_count"]; n != 15.0 {
		t.Errorf("stats item_scraped_count %v, want 15", n)
	}
	if code, log := sv.raw("GET", "/api/jobs/"+id+"/log?tail=3", nil, ""); code != 200 || strings.Count(string(log), "\n") != 3 {
		t.Errorf("log tail: %d %q", code, log)
	}
	if code, page := sv.raw("GET", "/api/jobs/"+id+"/report", nil, ""); code != 200 || !strings.Contains(string(page), "gocrawl report") {
		t.Errorf("report: %d %.200s", code, page)
	}
	if _, m := sv.raw("GET", "/metrics", nil, ""); !strings.Contains(string(m), `gocrawl_serve_jobs{state="finished"} 1`) {
		t.Errorf("metrics: %s", m)
	}
	if code, _ := sv.call("GET", "/api/jobs/nosuchjob", nil); code != 404 {
		t.Errorf("unknown job: %d", code)
	}
	// Another site's page cannot post to the service.
	req, _ = http.NewRequest("POST", sv.url+"/api/jobs/"+id+"/cancel", nil)
	req.Header.Set("Origin", "http://attacker.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("cross-origin POST: %v %v", resp.StatusCode, err)
	}
	// A tokenless service answers loopback names only.
	req, _ = http.NewRequest("GET", sv.url+"/api/jobs", nil)
	req.Host = "attacker.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("foreign Host: %v %v", resp.StatusCode, err)
	}
}

// TestCancel checks the queue and cancellation: a job waits while
// SERVE_MAX_JOBS run, a queued job is cancelled at once, a running one
// stops gracefully on the first cancel and aborts on the second.
func TestCancel(t *testing.T) {
	t.Parallel()
	st := newSite(t, 7, 1)
	sv := startServer(t, t.TempDir(), nil, "--max-jobs", "1")
	// SHUTDOWN_GRACE keeps the graceful stop waiting for the held request.
	a := sv.submit(st, map[string]any{"SHUTDOWN_GRACE": 600})
	sv.waitState(a, "running")
	waitFor(t, "the crawl to reach the gate", func() bool { return st.held() > 0 })
	b := sv.submit(st, nil)
	if j := sv.job(b); j["state"] != "queued" {
		t.Fatalf("second job %v with --max-jobs 1, want queued", j["state"])
	}
	if code, out := sv.call("POST", "/api/jobs/"+b+"/cancel", nil); code != 200 || out["state"] != "cancelled" {
		t.Errorf("cancel queued: %d %v", code, out)
	}
	if code, out := sv.call("POST", "/api/jobs/"+a+"/cancel", nil); code != 202 || out["cancel"] != "stopping" {
		t.Errorf("first cancel: %d %v", code, out)
	}
	if j := sv.job(a); j["state"] != "running" {
		t.Errorf("after a graceful stop with a request in flight: %v, want running", j["state"])
	}
	if code, out := sv.call("POST", "/api/jobs/"+a+"/cancel", nil); code != 202 || out["cancel"] != "aborting" {
		t.Errorf("second cancel: %d %v", code, out)
	}
	j := sv.waitState(a, "cancelled")
	if j["reason"] != "cancelled (aborted)" {
		t.Errorf("reason %q", j["reason"])
	}
	if code, _ := sv.call("POST", "/api/jobs/"+a+"/cancel", nil); code != 409 {
		t.Errorf("cancel of an ended job: %d, want 409", code)
	}
}

// TestKilledJob kills a job's process with SIGKILL: the service stays up,
// marks the job failed and runs the next one.
func TestKilledJob(t *testing.T) {
	t.Parallel()
	st := newSite(t, 7, 1)
	sv := startServer(t, t.TempDir(), nil)
	id := sv.submit(st, nil)
	j := sv.waitState(id, "running")
	waitFor(t, "the crawl to reach the gate", func() bool { return st.held() > 0 })
	if err := syscall.Kill(int(j["pid"].(float64)), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	j = sv.waitState(id, "failed")
	if r := j["reason"].(string); !strings.Contains(r, "killed") {
		t.Errorf("reason %q does not say the process was killed", r)
	}
	st.release()
	next := sv.submit(st, nil)
	sv.waitState(next, "finished")
}

// TestRestart stops the service while a job runs, with SIGKILL (the crawl
// gets SIGTERM from the kernel and saves its JOBDIR) or gracefully (the
// service stops the crawl itself), and the next service in the same
// directory resumes the job (SERVE_RECOVER=resume) to the end, or marks it
// failed (SERVE_RECOVER=fail).
func TestRestart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ stop, recover string }{{"crash", "resume"}, {"crash", "fail"}, {"graceful", "resume"}} {
		recover := tt.recover
		t.Run(tt.stop+"-"+recover, func(t *testing.T) {
			t.Parallel()
			st := newSite(t, 15, 3)
			dir := t.TempDir()
			sv := startServer(t, dir, nil)
			id := sv.submit(st, nil)
			waitFor(t, "the crawl to reach the gate", func() bool { return st.held() > 0 })
			pid := int(sv.job(id)["pid"].(float64))
			if tt.stop == "crash" {
				sv.crash()
				st.release()
			} else {
				st.release()
				sv.stop()
			}
			sv = startServer(t, dir, nil, "-s", "SERVE_RECOVER="+recover)
			if alive(pid) {
				t.Errorf("the new service started the job while its old process %d ran", pid)
			}
			if recover == "fail" {
				j := sv.waitState(id, "failed")
				if !strings.Contains(j["reason"].(string), "SERVE_RECOVER=fail") {
					t.Errorf("reason %q", j["reason"])
				}
				return
			}
			j := sv.waitState(id, "finished")
			if !strings.Contains(j["reason"].(string), "resumed") {
				t.Errorf("reason %q does not say the job was resumed", j["reason"])
			}
			urls := sv.items(id)
			slices.Sort(urls)
			if n := len(slices.Compact(urls)); n != 15 {
				t.Errorf("%d distinct items after the resume, want 15", n)
			}
		})
	}
}

// alive reports whether process pid runs (a zombie, whose parent died
// and which waits to be reaped, does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && len(b) > 0
}

// TestToken: off loopback the service refuses to start without a token;
// with one, a missing or wrong token gets 401 without detail, the right
// one (header or the page's cookie) passes.
func TestToken(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(osArgs0(), "serve", "--addr", "0.0.0.0:0", "--dir", t.TempDir())
	cmd.Env = append(cleanEnv(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "GOCRAWL_SERVE_TOKEN") {
		t.Errorf("serve on 0.0.0.0 without a token: %v\n%s", err, out)
	}

	sv := startServer(t, t.TempDir(), []string{"GOCRAWL_SERVE_TOKEN=s3cret-token"})
	for _, tok := range []string{"", "wrong", "s3cret-toke", "s3cret-token2"} {
		code, body := sv.raw("GET", "/api/jobs", nil, tok)
		if code != 401 || strings.Contains(string(body), "s3cret") || !strings.Contains(string(body), `"unauthorized"`) {
			t.Errorf("token %q: %d %s", tok, code, body)
		}
	}
	for _, path := range []string{"/", "/metrics", "/api/spiders"} {
		if code, _ := sv.raw("GET", path, nil, "wrong"); code != 401 {
			t.Errorf("%s with a wrong token: %d", path, code)
		}
		if code, _ := sv.raw("GET", path, nil, "s3cret-token"); code != 200 {
			t.Errorf("%s with the token: %d", path, code)
		}
	}
	// The page's sign-in link sets a cookie the page's calls carry.
	client := &http.Client{Jar: newJar(), CheckRedirect: nil}
	resp, err := client.Get(sv.url + "/?token=s3cret-token")
	if err != nil || resp.StatusCode != 200 || resp.Request.URL.RawQuery != "" {
		t.Fatalf("sign-in link: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := client.Get(sv.url + "/api/jobs"); err != nil || resp.StatusCode != 200 {
		t.Errorf("API call with the cookie: %v %v", resp, err)
	}
}

// TestScheduleNoOverlap: a schedule whose job still runs skips its next
// runs (no overlap by default).
func TestScheduleNoOverlap(t *testing.T) {
	t.Parallel()
	st := newSite(t, 7, 1)
	sv := startServer(t, t.TempDir(), nil)
	code, out := sv.call("POST", "/api/schedules", map[string]any{"spider": "site", "cron": "@every 1s", "args": map[string]string{"start_urls": st.start()}})
	if code != 201 {
		t.Fatalf("POST /api/schedules: %d %v", code, out)
	}
	id := out["id"].(string)
	waitFor(t, "a skipped run", func() bool {
		_, m := sv.raw("GET", "/metrics", nil, "")
		return strings.Contains(string(m), "gocrawl_serve_schedule_skipped_runs_total 1")
	})
	_, list := sv.call("GET", "/api/jobs?schedule="+id, nil)
	if jobs := list["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["state"] != "running" {
		t.Errorf("jobs of the schedule while its first runs: %v", list)
	}
	if code, _ := sv.call("DELETE", "/api/schedules/"+id, nil); code != 204 {
		t.Errorf("DELETE: %d", code)
	}
	_, scs := sv.call("GET", "/api/schedules", nil)
	if n := len(scs["schedules"].([]any)); n != 0 {
		t.Errorf("%d schedules after the delete", n)
	}
	st.release() // the service's stop need not wait for the held request
}

// TestMonitorFailure: a job whose monitors fail (MONITOR_MIN_ITEMS above
// what the crawl yields) exits 3 and becomes a failed job with the reasons
// of its monitors.json, counted in the metrics; the same settings under a
// lower threshold finish.
func TestMonitorFailure(t *testing.T) {
	t.Parallel()
	st := newSite(t, 3, 3)
	sv := startServer(t, t.TempDir(), nil)
	id := sv.submit(st, map[string]any{"MONITOR_MIN_ITEMS": 100})
	j := sv.waitState(id, "failed")
	const reason = "3 items, fewer than MONITOR_MIN_ITEMS 100"
	if r, _ := j["reason"].(string); !strings.Contains(r, "min_items") || !strings.Contains(r, reason) {
		t.Errorf("reason %q, want it to name min_items and %q", r, reason)
	}
	var failures []struct{ Monitor, Reason string }
	if err := json.Unmarshal([]byte(mustJSON(j["monitor_failures"])), &failures); err != nil || len(failures) != 1 || failures[0].Monitor != "min_items" || !strings.Contains(failures[0].Reason, reason) {
		t.Errorf("monitor_failures %s (%v)", mustJSON(j["monitor_failures"]), err)
	}
	ok := sv.submit(st, map[string]any{"MONITOR_MIN_ITEMS": 3})
	sv.waitState(ok, "finished")
	_, m := sv.raw("GET", "/metrics", nil, "")
	for _, want := range []string{`gocrawl_serve_monitor_failures_total{monitor="min_items"} 1`, "gocrawl_serve_monitor_failed_jobs_total 1", `gocrawl_serve_jobs{state="failed"} 1`, `gocrawl_serve_jobs{state="finished"} 1`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
