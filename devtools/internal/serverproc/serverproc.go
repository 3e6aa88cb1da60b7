// Package serverproc runs the server processes that the test helpers
// (redistest, pgtest) start for a test: a free loopback port, the process in
// a process group of its own, and a wait until it answers or exits.
package serverproc

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"syscall"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process can take it before the server binds it: callers retry
// with a new port when Start fails.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Process is a started server.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// Spec says how to start a server and how to know it is up.
type Spec struct {
	Name    string        // what errors call it ("redis-server on 127.0.0.1:6379")
	Timeout time.Duration // how long Ready may keep failing
	Poll    time.Duration // the pause between two calls of Ready
	// Ready returns nil once the server answers.
	Ready func() error
	// Log returns the end of the server's log, quoted when it exits at start.
	Log func() string
}

// ErrNotReady is wrapped by Start's error when the server did not answer
// within Spec.Timeout (it is killed then).
var ErrNotReady = errors.New("did not answer in time")

// Start starts cmd in a process group of its own (so a kill reaches its
// children) and waits until spec.Ready succeeds. It returns an error that
// quotes the server's log when the process exits first.
func Start(cmd *exec.Cmd, spec Spec) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(spec.Timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			log := ""
			if spec.Log != nil {
				log = spec.Log()
			}
			return nil, fmt.Errorf("%s exited at start: %s", spec.Name, log)
		default:
		}
		if spec.Ready() == nil {
			return p, nil
		}
		time.Sleep(spec.Poll)
	}
	p.Kill()
	return nil, fmt.Errorf("%s: %w (%s)", spec.Name, ErrNotReady, spec.Timeout)
}

// Kill stops the whole process group with SIGKILL, as a crash, and waits
// for the server to exit.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stop sends sig (a clean shutdown) and waits up to grace for the server to
// exit, then kills its process group.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}
