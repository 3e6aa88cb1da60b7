// Package redistest starts real redis-server processes for tests: a
// standalone server, or a cluster of three masters, each on a free
// 127.0.0.1 port with its own temporary directory, stopped when the test
// (or the test binary, with Main) ends.
//
// Nothing is skipped silently: when redis-server is not installed a test
// that asks for it fails, telling to run scripts/test.sh (which installs it
// from the distribution's packages). Setting GOCRAWL_SKIP_REDIS=1 skips
// such tests explicitly instead.
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		srv := redistest.Shared(t) // one server per test binary
//		url := srv.URL()           // redis://127.0.0.1:PORT/0
//		...
//	}
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/internal/serverproc"
)

// SkipEnv is the environment variable that skips the Redis tests when set
// to 1.
const SkipEnv = "GOCRAWL_SKIP_REDIS"

// Options configure a server.
type Options struct {
	// AppendOnly turns on the append-only file (appendfsync always), so a
	// restarted server gets its data back.
	AppendOnly bool
	// Args are extra redis-server arguments ("--maxmemory", "64mb", ...).
	Args []string
}

// Server is one redis-server process.
type Server struct {
	Addr string // 127.0.0.1:PORT
	Dir  string // its working directory (AOF, cluster config)

	opts    Options
	cluster bool

	mu   sync.Mutex
	proc *serverproc.Process
}

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Port is the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// binary returns the path of redis-server, or fails/skips t.
func binary(t testing.TB) string {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("%s=1: skipping a test that needs redis-server", SkipEnv)
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (not in PATH): run scripts/test.sh, which installs it "+
			"(apt-get install redis-server), or set %s=1 to skip the tests that need it", SkipEnv)
	}
	return p
}

// Start starts a standalone server for t, stopped when t ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := start(binary(t), t.TempDir(), o, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Kill() })
	return s
}

func start(bin, dir string, o Options, cluster bool) (*Server, error) {
	var last error
	for range 5 { // a free port can be taken between probing and binding
		port, err := serverproc.FreePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: dir, opts: o, cluster: cluster}
		if err := s.run(bin); err != nil {
			last = err
			continue
		}
		return s, nil
	}
	return nil, fmt.Errorf("redistest: cannot start redis-server: %w", last)
}

// run starts the process on s.Addr and waits until it answers PING.
func (s *Server) run(bin string) error {
	args := []string{"--port", strconv.Itoa(s.Port()), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning",
		"--logfile", filepath.Join(s.Dir, "redis.log")}
	if s.opts.AppendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	if s.cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(s.Dir, "nodes.conf"),
			"--cluster-node-timeout", "2000")
	}
	args = append(args, s.opts.Args...)
	p, err := serverproc.Start(exec.Command(bin, args...), serverproc.Spec{
		Name:    "redis-server on " + s.Addr,
		Timeout: 10 * time.Second,
		Poll:    20 * time.Millisecond,
		Ready: func() error {
			if reply, err := Command(s.Addr, "PING"); err != nil || reply != "PONG" {
				return fmt.Errorf("PING: %q, %v", reply, err)
			}
			return nil
		},
		Log: func() string {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			return strings.TrimSpace(string(log))
		},
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// Kill stops the server with SIGKILL (as a crash) and waits for it.
func (s *Server) Kill() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.Kill()
	}
}

// Restart starts the server again on the same port and directory after
// Kill: with Options.AppendOnly it comes back with its data, otherwise
// empty.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	var err error
	for range 50 { // the port may linger for a moment after the kill
		if err = s.run(binary(t)); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(err)
}

// Command sends one command in RESP to addr and returns the reply as
// text (simple strings, integers and bulk strings; arrays are joined by
// newlines). It needs no client library, so the helper works before any
// is set up.
func Command(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(c))
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// Cluster is a Redis Cluster of three masters without replicas.
type Cluster struct {
	Nodes []*Server
}

// URL is a redis:// URL of the first node; clients discover the others
// (gocrawl detects a cluster from any node's INFO).
func (c *Cluster) URL() string { return c.Nodes[0].URL() }

// Addrs are the nodes' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// Kill stops every node.
func (c *Cluster) Kill() {
	for _, n := range c.Nodes {
		n.Kill()
	}
}

// StartCluster starts a three-master cluster for t: three servers with
// cluster mode on, joined and given every hash slot by
// `redis-cli --cluster create`, then waits until every node reports
// cluster_state:ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster(binary(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	return c
}

func startCluster(bin, dir string) (*Cluster, error) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, errors.New("redis-cli is not installed (it comes with redis-server): run scripts/test.sh")
	}
	c := &Cluster{}
	for i := range 3 {
		d := filepath.Join(dir, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		s, err := start(bin, d, Options{}, true)
		if err != nil {
			c.Kill()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(cli, args...).CombinedOutput()
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		for {
			info, err := Command(n.Addr, "CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Kill()
				return nil, fmt.Errorf("cluster node %s not ready: %v %s", n.Addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c, nil
}

var shared struct {
	mu      sync.Mutex
	srv     *Server
	cluster *Cluster
	dir     string
}

// Main runs the tests of a package that uses Shared or SharedCluster and
// stops their servers afterwards, then runs cleanup. Call it from TestMain.
func Main(m *testing.M, cleanup ...func()) {
	code := m.Run()
	for _, c := range cleanup {
		c()
	}
	shared.mu.Lock()
	if shared.srv != nil {
		shared.srv.Kill()
	}
	if shared.cluster != nil {
		shared.cluster.Kill()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	os.Exit(code)
}

func sharedDir() (string, error) {
	if shared.dir == "" {
		d, err := os.MkdirTemp("", "gocrawl-redistest")
		if err != nil {
			return "", err
		}
		shared.dir = d
	}
	return shared.dir, nil
}

// Shared returns the test binary's standalone server, starting it on first
// use; Main stops it. Tests sharing it must use distinct keys (a distinct
// job name).
func Shared(t testing.TB) *Server {
	t.Helper()
	bin := binary(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil {
		dir, err := sharedDir()
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, "standalone")
		os.MkdirAll(d, 0o755)
		if shared.srv, err = start(bin, d, Options{}, false); err != nil {
			t.Fatal(err)
		}
	}
	return shared.srv
}

// SharedCluster is Shared for a three-node cluster.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := binary(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil {
		dir, err := sharedDir()
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, "cluster")
		os.MkdirAll(d, 0o755)
		if shared.cluster, err = startCluster(bin, d); err != nil {
			t.Fatal(err)
		}
	}
	return shared.cluster
}

// Wait polls cond every 10 ms until it holds or ctx ends.
func Wait(ctx context.Context, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}
