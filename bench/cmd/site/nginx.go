package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// nginxOptions are the command-line settings of the nginx mode.
type nginxOptions struct {
	bin     string // nginx binary; "" looks it up
	workers string // worker_processes: a number or "auto"
}

// tmpEnv names the folder under which the nginx mode makes its own
// (default: the system's temporary folder). bench/run.sh points it at a
// folder of its own, so that its exit trap can stop any nginx left behind.
const tmpEnv = "BENCH_NGINX_TMP"

// nginxConf is the whole configuration: nothing from /etc/nginx is read.
// One master and -nginx-workers workers; no access log (a busy log would
// cost the server CPU the Go site does not spend); keep-alive on, with no
// practical limit on the requests of a connection (nginx closes one after
// 1,000 by default; the Go site never does); sendfile; every file sent
// as "text/html; charset=utf-8", as the Go site sends its pages; no ETag,
// no Server version. No open_file_cache (nginx's default): a crawl asks
// for each page once, so the cache would only hold descriptors, and
// 20,000 of them exhaust a common limit of open files. Temporary folders, pid file and error log (stderr) stay in the
// prefix folder or this process, so it runs as any user.
var nginxConf = template.Must(template.New("nginx.conf").Parse(`# Written by bench/cmd/site (-server nginx) for scenario {{.Scenario}}.
worker_processes {{.Workers}};
daemon off;
master_process on;
pid {{.Dir}}/nginx.pid;
error_log stderr warn;

events {
    worker_connections 4096;
}

http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
    types { }
    default_type text/html;
    charset utf-8;
    etag off;
    server_tokens off;
    client_body_temp_path {{.Dir}}/tmp/body;
    proxy_temp_path {{.Dir}}/tmp/proxy;
    fastcgi_temp_path {{.Dir}}/tmp/fastcgi;
    uwsgi_temp_path {{.Dir}}/tmp/uwsgi;
    scgi_temp_path {{.Dir}}/tmp/scgi;
{{range .Hosts}}
    # host {{.Name}}: "/" is index.html, "/page/N" the file page/N
    server {
        listen 127.0.0.1:{{.Port}};
        server_name localhost;
        root {{.Root}};
        index index.html;
    }
{{end}}
    # request and connection counters (stub_status), on a port of their own
    server {
        listen 127.0.0.1:{{.StatusPort}};
        location / {
            stub_status;
        }
    }
}
`))

type confHost struct {
	Name, Root string
	Port       int
}

type confData struct {
	Scenario, Workers, Dir string
	Hosts                  []confHost
	StatusPort             int
}

// nginxSite is an nginx process serving a scenario's pages as files.
type nginxSite struct {
	dir       string
	cmd       *exec.Cmd
	exited    chan struct{} // closed when cmd has exited
	waitErr   error
	stderr    *tailBuffer
	urls      map[string]string
	statusURL string
	content   content
	base      nginxStatus // the counters once nginx was ready
	probes    int64       // status requests since base
	cpu0      time.Duration
	oneHost   string // the host name, when there is only one
	closeOnce sync.Once
	closeErr  error
}

// startNginx writes sc's pages under a new temporary folder and starts
// nginx on free 127.0.0.1 ports; it returns once every host answers its
// front page.
func startNginx(sc scenario.Scenario, opt nginxOptions) (_ *nginxSite, err error) {
	if err := sc.Static(); err != nil {
		return nil, err
	}
	if opt.workers != "auto" {
		if n, err := strconv.Atoi(opt.workers); err != nil || n < 1 {
			return nil, fmt.Errorf("%w: -nginx-workers %q: want a number >= 1 or auto", errUsage, opt.workers)
		}
	}
	bin, err := findNginx(opt.bin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(os.Getenv(tmpEnv), "gocrawl-bench-nginx-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	// nginx's workers drop root privileges (to nobody): the pages must be
	// readable by anyone.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if err := checkReachable(dir); err != nil {
		return nil, err
	}
	if err := checkRoom(dir, sc.Site); err != nil {
		return nil, err
	}
	for _, sub := range []string{"tmp", "root"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	// Free ports are found by listening on port 0 and closing: another
	// process may take one before nginx binds it, so a failed bind is
	// tried again with new ports.
	for attempt := 1; ; attempt++ {
		s, err := tryNginx(sc, bin, opt.workers, dir)
		if err == nil {
			return s, nil
		}
		if attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			return nil, err
		}
	}
}

func tryNginx(sc scenario.Scenario, bin, workers, dir string) (_ *nginxSite, err error) {
	data := confData{Scenario: sc.Name, Workers: workers, Dir: dir}
	ports, err := freePorts(len(sc.Site.Hosts) + 1)
	if err != nil {
		return nil, err
	}
	s := &nginxSite{dir: dir, urls: map[string]string{}, stderr: &tailBuffer{max: 16 << 10}, exited: make(chan struct{})}
	for i, h := range sc.Site.Hosts {
		root := filepath.Join(dir, "root", h.Name)
		data.Hosts = append(data.Hosts, confHost{Name: h.Name, Root: root, Port: ports[i]})
		s.urls[h.Name] = "http://localhost:" + strconv.Itoa(ports[i])
		if err := os.RemoveAll(root); err != nil { // a previous attempt's
			return nil, err
		}
	}
	if len(sc.Site.Hosts) == 1 {
		s.oneHost = sc.Site.Hosts[0].Name
	}
	data.StatusPort = ports[len(ports)-1]
	s.statusURL = "http://127.0.0.1:" + strconv.Itoa(data.StatusPort) + "/"

	s.content, err = renderSite(sc.Site, hostHeaders(s.urls), func(host, path string, body []byte) error {
		file := filepath.Join(dir, "root", host, filepath.FromSlash(path))
		if path == "/" {
			file = filepath.Join(file, "index.html")
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		return os.WriteFile(file, body, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("writing the pages: %w", err)
	}
	var conf bytes.Buffer
	if err := nginxConf.Execute(&conf, data); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o644); err != nil {
		return nil, err
	}

	// -e stderr: nginx writes to its compiled-in error log until it has
	// read the configuration otherwise.
	s.cmd = exec.Command(bin, "-p", dir, "-c", confPath, "-e", "stderr")
	s.cmd.Stdout = os.Stderr
	s.cmd.Stderr = io.MultiWriter(os.Stderr, s.stderr)
	// Should this process die without stopping nginx (SIGKILL), the
	// kernel sends nginx's master SIGTERM: a fast shutdown.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	defer func() {
		if err != nil {
			_ = s.stop()
		}
	}()
	if err := s.ready(60 * time.Second); err != nil {
		return nil, err
	}
	s.base, err = s.status()
	if err != nil {
		return nil, err
	}
	s.probes = 0
	if s.cpu0, err = treeCPU(s.cmd.Process.Pid); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "site: nginx (%s, %s workers) serves %d pages of %s from %s\n", bin, workers, s.content.Pages, sc.Name, dir)
	return s, nil
}

// ready waits until every host answers its front page with the expected
// type (a folder nginx cannot read answers 403).
func (s *nginxSite) ready(timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(timeout)
	for h, u := range s.urls {
		for {
			res, err := client.Get(u + "/")
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusOK && res.Header.Get("Content-Type") == contentType {
					break
				}
				return fmt.Errorf("nginx: host %q: GET / answered %s, type %q (see nginx's error log above)", h, res.Status, res.Header.Get("Content-Type"))
			}
			select {
			case <-s.exited:
				return fmt.Errorf("nginx exited (%v): %s", s.waitErr, strings.TrimSpace(s.stderr.String()))
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("nginx: host %q: no answer within %v: %w", h, timeout, err)
			}
		}
	}
	return nil
}

func (s *nginxSite) URLs() map[string]string { return s.urls }

// Stats reports the requests nginx answered (no log, so no status
// counts) under the site's host when it has only one.
func (s *nginxSite) Stats() (map[string]simsite.HostStats, error) {
	sv, err := s.Served()
	if err != nil {
		return nil, err
	}
	out := map[string]simsite.HostStats{}
	if s.oneHost != "" {
		out[s.oneHost] = simsite.HostStats{Requests: int(sv.Requests)}
	}
	return out, nil
}

func (s *nginxSite) Served() (served, error) {
	st, err := s.status()
	if err != nil {
		return served{}, err
	}
	cpu, err := treeCPU(s.cmd.Process.Pid)
	if err != nil {
		return served{}, err
	}
	// Every status probe is a request on a connection of its own,
	// counted by nginx (this one included).
	return served{content: s.content, Requests: st.requests - s.base.requests - s.probes, Connections: st.accepts - s.base.accepts - s.probes,
		CPUSeconds: (cpu - s.cpu0).Seconds()}, nil
}

// nginxStatus are the counters of stub_status.
type nginxStatus struct{ accepts, requests int64 }

// status reads the counters (one request, on a new connection).
func (s *nginxSite) status() (nginxStatus, error) {
	var st nginxStatus
	s.probes++
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Get(s.statusURL)
	if err != nil {
		return st, fmt.Errorf("nginx status: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return st, fmt.Errorf("nginx status: %w", err)
	}
	return parseStatus(body)
}

// parseStatus reads stub_status's answer:
//
//	Active connections: 1
//	server accepts handled requests
//	 7 7 42
//	Reading: 0 Writing: 1 Waiting: 0
func parseStatus(body []byte) (nginxStatus, error) {
	lines := strings.Split(string(body), "\n")
	if len(lines) < 3 || strings.TrimSpace(lines[1]) != "server accepts handled requests" {
		return nginxStatus{}, fmt.Errorf("nginx status: unexpected answer %q", body)
	}
	f := strings.Fields(lines[2])
	if len(f) != 3 {
		return nginxStatus{}, fmt.Errorf("nginx status: unexpected counters %q", lines[2])
	}
	accepts, err1 := strconv.ParseInt(f[0], 10, 64)
	requests, err2 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return nginxStatus{}, fmt.Errorf("nginx status: %w", err)
	}
	return nginxStatus{accepts: accepts, requests: requests}, nil
}

// Close stops nginx (fast shutdown: SIGTERM, SIGKILL after 10 s) and
// removes the folder.
func (s *nginxSite) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.stop(), os.RemoveAll(s.dir))
	})
	return s.closeErr
}

func (s *nginxSite) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	return fmt.Errorf("nginx did not stop within 10 s of SIGTERM: killed")
}

// findNginx returns bin, or nginx from PATH, or Debian's /usr/sbin/nginx
// (not on a normal user's PATH).
func findNginx(bin string) (string, error) {
	if bin != "" {
		return exec.LookPath(bin)
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", errors.New("nginx not found (on PATH or /usr/sbin/nginx): install it (Debian: apt-get install nginx; bench/run.sh -server nginx does) or give -nginx")
}

// freePorts returns n ports that were free on 127.0.0.1 a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// checkReachable refuses, when this process runs as root, a folder that
// nginx's workers (which then switch to the user nobody) cannot enter.
func checkReachable(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("nginx's workers run as nobody and cannot enter %s (mode %v): point %s at a folder anyone can enter (bench/run.sh does)", d, fi.Mode().Perm(), tmpEnv)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// checkRoom refuses to write a site that would not fit in dir's file
// system (counting a 4 KiB block of overhead per page).
func checkRoom(dir string, cfg simsite.Config) error {
	var need int64
	for _, h := range cfg.Hosts {
		need += int64(h.Pages.Count) * (int64(h.Pages.Size) + 4096)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return nil // cannot tell: try
	}
	if free := int64(fs.Bavail) * fs.Bsize; free < need {
		return fmt.Errorf("the site's pages need about %d MB in %s, %d MB free", need>>20, dir, free>>20)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
