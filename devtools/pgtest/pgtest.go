// Package pgtest starts real PostgreSQL servers for tests: initdb makes a
// cluster in a temporary directory, postgres listens on a free 127.0.0.1
// port (its unix socket in that directory too), and the server is stopped
// and the directory removed when the test ends. A system server is never
// used.
//
// The binaries are found on PATH or in /usr/lib/postgresql/*/bin (where
// Debian's postgresql package puts them). PostgreSQL refuses to run as
// root: when the test runs as root, the cluster's directory is given to
// the postgres user (or nobody when there is none) and initdb and postgres
// run as that user.
//
// Nothing is skipped silently: without PostgreSQL a test that asks for it
// fails, telling to run scripts/test.sh (which installs it). Setting
// GOCRAWL_SKIP_POSTGRES=1 skips such tests explicitly instead.
//
//	srv := pgtest.Start(t)
//	url := srv.CreateDB(t, "crawl") // postgresql://postgres:...@127.0.0.1:PORT/crawl
package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/internal/serverproc"

	"github.com/jackc/pgx/v5"
)

// SkipEnv is the environment variable that skips the PostgreSQL tests
// when set to 1.
const SkipEnv = "GOCRAWL_SKIP_POSTGRES"

// Superuser and Password are the cluster's superuser and its password.
const (
	Superuser = "postgres"
	Password  = "pgtest-secret"
)

// Server is one postgres process and its cluster.
type Server struct {
	Host string // 127.0.0.1
	Port int
	Dir  string // the cluster's directory (data/, the socket, the log)

	bin  string
	cred *syscall.Credential

	mu   sync.Mutex
	proc *serverproc.Process
}

// binDir returns the directory of initdb and postgres, or fails/skips t.
func binDir(t testing.TB) string {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("%s=1: skipping a test that needs PostgreSQL", SkipEnv)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "postgres")); err == nil {
			return filepath.Dir(p)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	t.Fatalf("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): run scripts/test.sh, "+
		"which installs it (apt-get install postgresql), or set %s=1 to skip the tests that need it", SkipEnv)
	return ""
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// runAs returns the credential to run PostgreSQL with: nil unless root.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root, and neither the postgres nor the nobody user exists to run PostgreSQL as")
}

// Start initialises a cluster and starts its server for t, stopped and
// removed when t ends. The superuser (Superuser) logs in with Password
// over TCP (scram-sha-256) and without one on the unix socket.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binDir(t)
	cred, err := runAs()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parents are private to the test's user.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{Host: "127.0.0.1", Dir: dir, bin: bin, cred: cred}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		os.Chown(pw, int(cred.Uid), int(cred.Gid))
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", Superuser,
		"--pwfile", pw, "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	t.Cleanup(s.Stop)
	var last error
	for range 5 { // a free port can be taken between probing and binding
		if s.Port, err = serverproc.FreePort(); err != nil {
			t.Fatal(err)
		}
		if last = s.run(); last == nil {
			return s
		}
	}
	t.Fatalf("pgtest: cannot start postgres: %v", last)
	return nil
}

// run starts postgres on s.Port and waits until it accepts connections.
func (s *Server) run() error {
	logf, err := os.OpenFile(filepath.Join(s.Dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.Dir, "data"),
		"-h", s.Host, "-p", strconv.Itoa(s.Port), "-k", s.Dir,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "shared_buffers=16MB", "-c", "max_connections=40",
		"-c", "logging_collector=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := serverproc.Start(cmd, serverproc.Spec{
		Name:    fmt.Sprintf("postgres on port %d", s.Port),
		Timeout: 30 * time.Second,
		Poll:    50 * time.Millisecond,
		Ready: func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, s.URL("postgres"))
			if err != nil {
				return err
			}
			return c.Close(context.Background())
		},
		Log: func() string {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "postgres.log"))
			return lastLines(string(log), 5)
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

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// URL returns the superuser's postgresql:// URL of database db.
func (s *Server) URL(db string) string {
	return s.UserURL(Superuser, Password, db)
}

// UserURL returns the postgresql:// URL of database db for a user.
func (s *Server) UserURL(user, password, db string) string {
	u := url.URL{Scheme: "postgresql", User: url.UserPassword(user, password),
		Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Path: "/" + db}
	return u.String()
}

// Exec runs SQL statements as the superuser in database db.
func (s *Server) Exec(t testing.TB, db string, sql ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range sql {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("pgtest: %s: %v", q, err)
		}
	}
}

// CreateDB creates database name and returns its superuser URL.
func (s *Server) CreateDB(t testing.TB, name string) string {
	t.Helper()
	s.Exec(t, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return s.URL(name)
}

// Stop shuts the server down (a fast shutdown: sessions are ended) and
// waits for it. Start it again with Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.Stop(syscall.SIGINT, 30*time.Second)
	}
}

// Restart starts the server again on the same port after Stop, with its
// data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	var err error
	for range 50 { // the port may linger for a moment
		if err = s.run(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(err)
}
