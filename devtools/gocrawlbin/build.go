// Package gocrawlbin builds the gocrawl command for tests that run crawls
// as child processes (to send them signals, kill them, or read their peak
// memory from outside), and runs it with a clean environment.
package gocrawlbin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build compiles github.com/gocrawl/gocrawl/cmd/gocrawl into a new
// temporary folder and returns the binary's path and a function that
// removes the folder. The compiler's output goes to standard error.
func Build() (binary string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "gocrawl-bin")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	binary = filepath.Join(dir, "gocrawl")
	build := exec.Command("go", "build", "-o", binary, "github.com/gocrawl/gocrawl/cmd/gocrawl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building gocrawl: %w", err)
	}
	return binary, cleanup, nil
}

// MustBuild is Build for a TestMain: it exits the process with status 1,
// after printing why, when the build fails.
func MustBuild() (binary string, cleanup func()) {
	binary, cleanup, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return binary, cleanup
}

// Main is a TestMain for tests that run gocrawl: it builds the binary,
// stores its path in *binary, runs the tests, removes the binary and exits
// with the tests' status.
func Main(m *testing.M, binary *string) {
	bin, cleanup := MustBuild()
	*binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// Command returns a command that runs binary with args in dir. Its
// environment is the test's own without the GOCRAWL_ variables (a
// developer's settings must not change what a test sees), then env, so
// that env wins.
func Command(ctx context.Context, binary, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOCRAWL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// Result is what a finished gocrawl process did.
type Result struct {
	Code           int // exit status; -1 when a signal ended it
	Stdout, Stderr string
}

// Run runs binary with args in dir (see Command) to its end. An exit
// status other than 0 is a Result, not an error; the error is for a
// process that could not be run.
func Run(ctx context.Context, binary, dir string, env []string, args ...string) (Result, error) {
	cmd := Command(ctx, binary, dir, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		return r, fmt.Errorf("running gocrawl %s: %w", strings.Join(args, " "), err)
	}
	return r, nil
}
