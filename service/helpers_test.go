package service_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/devtools/syncbuf"
	"github.com/gocrawl/gocrawl/spider"
)

// The end-to-end tests run in parallel: each has its own site, service
// process and directory.

// childEnv makes this test binary the command line of a program with
// siteSpider (cli.Main): the service runs as `TESTBINARY serve`, and its
// jobs as `TESTBINARY run site ...`, exactly as in a user's program.
const childEnv = "SERVICE_TEST_PROGRAM"

// siteSpider crawls the test site from its start_urls, one item per page.
type siteSpider struct{ spider.Base }

func (*siteSpider) Name() string { return "site" }

func (s *siteSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.Item(map[string]any{"url": res.URL.Path})
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	out.FollowAll(res, doc.Find("a"), s.Parse)
	return nil
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		cli.Main(&siteSpider{})
	}
	os.Exit(m.Run())
}

// site is a tree of n pages (/p/i links to /p/2i+1 and /p/2i+2). Pages
// from /p/<open> on wait until release is called, so that a test holds a
// crawl in the running state as long as it needs.
type site struct {
	n, open int
	srv     *httptest.Server

	mu      sync.Mutex
	gate    chan struct{}
	hits    map[int]int
	waiting int // requests held at the gate
}

func newSite(t *testing.T, n, open int) *site {
	s := &site{n: n, open: open, gate: make(chan struct{}), hits: map[int]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.release()
		s.srv.Close()
	})
	return s
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
	if err != nil || i < 0 || i >= s.n {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	gate := s.gate
	s.hits[i]++
	if i >= s.open {
		s.waiting++
	}
	s.mu.Unlock()
	if i >= s.open {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, "<html><body>")
	for _, c := range []int{2*i + 1, 2*i + 2} {
		if c < s.n {
			fmt.Fprintf(w, `<a href="/p/%d">p%d</a>`, c, c)
		}
	}
	fmt.Fprint(w, "</body></html>")
}

// held returns how many requests have reached the gate.
func (s *site) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// release opens the gate for good.
func (s *site) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.gate:
	default:
		close(s.gate)
	}
}

func (s *site) start() string { return s.srv.URL + "/p/0" }

// server is a `serve` process of the test program.
type server struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	token  string
	stderr *syncbuf.Buffer
	done   chan struct{}
}

// startServer runs `serve --addr 127.0.0.1:0 --dir dir args...` and waits
// until it listens.
func startServer(t *testing.T, dir string, env []string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0", "--dir", dir}, args...)...)
	cmd.Env = append(append(cleanEnv(), childEnv+"=1"), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	sv := &server{t: t, cmd: cmd, stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = sv.stderr
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOCRAWL_SERVE_TOKEN="); ok {
			sv.token = v
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(sv.done) }()
	t.Cleanup(func() {
		if t.Failed() {
			// Its jobs may wait at a site's gate: do not wait for them.
			sv.crash()
			t.Logf("serve's log:\n%s", sv.stderr.String())
			return
		}
		sv.stop()
		if strings.Contains(sv.stderr.String(), "DATA RACE") { // a -race build of the service
			t.Errorf("the service had a data race:\n%s", sv.stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve did not start: %v\n%s", err, sv.stderr.String())
	}
	sv.url = strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, "gocrawl serve: listening on ")), "/")
	go io.Copy(io.Discard, stdout)
	return sv
}

// stop ends the service gracefully (as Ctrl-C does) and waits for it.
func (sv *server) stop() {
	sv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-sv.done:
	case <-time.After(90 * time.Second):
		sv.cmd.Process.Kill()
		<-sv.done
	}
}

// crash kills the service with SIGKILL.
func (sv *server) crash() {
	sv.cmd.Process.Kill()
	<-sv.done
}

// cleanEnv is the test's environment without GOCRAWL_ variables (a
// developer's settings must not change what a test sees).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOCRAWL_") {
			env = append(env, kv)
		}
	}
	return env
}

// call does one API request (body is JSON-encoded unless it is a string)
// and returns the status and the decoded answer.
func (sv *server) call(method, path string, body any) (int, map[string]any) {
	sv.t.Helper()
	code, raw := sv.raw(method, path, body, sv.token)
	var out map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			sv.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return code, out
}

func (sv *server) raw(method, path string, body any, token string) (int, []byte) {
	sv.t.Helper()
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequest(method, sv.url+path, rd)
	if err != nil {
		sv.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		sv.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// submit starts a job of the site spider and returns its id.
func (sv *server) submit(st *site, settings map[string]any) string {
	sv.t.Helper()
	body := map[string]any{"spider": "site", "args": map[string]string{"start_urls": st.start()}, "settings": settings}
	code, out := sv.call("POST", "/api/jobs", body)
	if code != http.StatusCreated {
		sv.t.Fatalf("POST /api/jobs: %d %v", code, out)
	}
	return out["id"].(string)
}

// job returns GET /api/jobs/ID.
func (sv *server) job(id string) map[string]any {
	sv.t.Helper()
	code, out := sv.call("GET", "/api/jobs/"+id, nil)
	if code != http.StatusOK {
		sv.t.Fatalf("GET /api/jobs/%s: %d %v", id, code, out)
	}
	return out
}

// waitFor polls cond until it holds; it fails the test after a minute
// (a deadline for a stuck test, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitState waits until job id is in state want and returns it.
func (sv *server) waitState(id, want string) map[string]any {
	sv.t.Helper()
	var j map[string]any
	waitFor(sv.t, "job "+id+" "+want, func() bool {
		j = sv.job(id)
		if s := j["state"]; s != want && (s == "finished" || s == "failed" || s == "cancelled") {
			sv.t.Fatalf("job %s ended %s (%v), want %s", id, s, j["reason"], want)
		}
		return j["state"] == want
	})
	return j
}

// items reads the job's items (JSON lines) and returns their urls.
func (sv *server) items(id string) []string {
	sv.t.Helper()
	code, raw := sv.raw("GET", "/api/jobs/"+id+"/items", nil, sv.token)
	if code != http.StatusOK {
		sv.t.Fatalf("items: %d %s", code, raw)
	}
	return itemURLs(sv.t, raw)
}

func itemURLs(t *testing.T, raw []byte) []string {
	t.Helper()
	var urls []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		if line == "" {
			continue
		}
		var it struct{ URL string }
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatalf("item line %q: %v", line, err)
		}
		urls = append(urls, it.URL)
	}
	return urls
}
