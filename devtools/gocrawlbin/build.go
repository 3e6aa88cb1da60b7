// Package gocrawlbin builds the gocrawl command for tests that run crawls
// as child processes (to send them signals, kill them, or read their peak
// memory from outside).
package gocrawlbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
