// Package s3test starts a real S3-compatible server (devtools/s3server,
// gofakes3 with its objects on disk) as a separate process on a free
// 127.0.0.1 port for tests, and stops it when the test ends.
//
//	srv := s3test.Start(t, "feeds")      // one bucket, "feeds"
//	srv.Endpoint()                        // http://127.0.0.1:PORT
//	srv.Env()                             // AWS_* variables for a child crawl
//
// The server accepts requests signed with AccessKey only, so a test can
// check that refused credentials are reported. Pause and Continue stop
// and restart the process with SIGSTOP and SIGCONT: the server is away
// (connections hang) while keeping its incomplete multipart uploads.
package s3test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The credentials the server accepts, and the region clients use.
const (
	AccessKey = "GOCRAWLTESTKEY"
	SecretKey = "gocrawl-test-secret"
	Region    = "us-east-1"
)

var build struct {
	once sync.Once
	bin  string
	err  error
}

// binary builds devtools/s3server once per test binary.
func binary() (string, error) {
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "s3server-bin")
		if err != nil {
			build.err = err
			return
		}
		bin := filepath.Join(dir, "s3server")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/gocrawl/gocrawl/devtools/s3server")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			build.err = fmt.Errorf("building devtools/s3server: %w", err)
			return
		}
		build.bin = bin
	})
	return build.bin, build.err
}

// Server is one running s3server process.
type Server struct {
	Addr string // 127.0.0.1:PORT
	Dir  string // where its objects are
	cmd  *exec.Cmd
}

// Start starts a server with the given buckets and stops it when t ends.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"-addr", "127.0.0.1:0", "-dir", dir, "-access-key", AccessKey}
	for _, b := range buckets {
		args = append(args, "-bucket", b)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: dir, cmd: cmd}
	t.Cleanup(s.stop)
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		addr, found := strings.CutPrefix(l, "listening on ")
		if !ok || !found {
			t.Fatalf("s3server did not start (it said %q)", l)
		}
		s.Addr = addr
	case <-time.After(30 * time.Second):
		t.Fatal("s3server did not start within 30 s")
	}
	return s
}

// Endpoint is the server's URL.
func (s *Server) Endpoint() string { return "http://" + s.Addr }

// Env returns the environment variables that point an AWS SDK client
// (and so a gocrawl child process) at the server with its credentials.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_REGION=" + Region,
		"AWS_ENDPOINT_URL=" + s.Endpoint(),
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// Pause stops the process (SIGSTOP): requests hang until Continue.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Continue resumes a paused process (SIGCONT).
func (s *Server) Continue() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}
