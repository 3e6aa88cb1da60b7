package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocrawl/gocrawl/devtools/redistest"
)

// redisServer is a redis-server process on a free loopback port, in a
// temporary folder, without persistence: the Redis of a multi-worker run
// (-workers).
type redisServer struct {
	addr string
	dir  string
	cmd  *exec.Cmd
}

// startRedis starts redis-server (found on PATH) and waits until it
// answers PING.
func startRedis() (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("-workers needs redis-server on PATH: %w", err)
	}
	dir, err := os.MkdirTemp("", "gocrawl-broad-redis-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
		"--loglevel", "warning", "--logfile", filepath.Join(dir, "redis.log"))
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if reply, err := redistest.Command(s.addr, "PING"); err == nil && reply == "PONG" {
			return s, nil
		}
	}
	s.Close()
	return nil, fmt.Errorf("redis-server on %s did not answer PING within 10 s", s.addr)
}

func (s *redisServer) URL() string { return "redis://" + s.addr + "/0" }

// Close stops the server and removes its folder.
func (s *redisServer) Close() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	os.RemoveAll(s.dir)
}

// redisCounters are the server's counters a run reads before and after
// the crawl.
type redisCounters struct {
	// Reads counts the read events on client sockets (INFO stats
	// total_reads_processed): one per request the server reads, a
	// pipeline or a script call included, so one per round trip.
	Reads int64
	// Commands counts the commands executed (total_commands_processed): a
	// pipeline of n commands counts n.
	Commands int64
	// CPU is the server's user and system CPU time, in seconds.
	CPU float64
}

// counters reads INFO stats and INFO cpu.
func (s *redisServer) counters() (redisCounters, error) {
	var c redisCounters
	info, err := redistest.Command(s.addr, "INFO", "all")
	if err != nil {
		return c, fmt.Errorf("redis INFO: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "total_reads_processed":
			c.Reads, _ = strconv.ParseInt(v, 10, 64)
		case "total_commands_processed":
			c.Commands, _ = strconv.ParseInt(v, 10, 64)
		case "used_cpu_sys", "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			c.CPU += f
		}
	}
	return c, nil
}

// commandStats returns the calls per command (INFO commandstats), for the
// breakdown of a run's commands.
func (s *redisServer) commandStats() (map[string]int64, error) {
	info, err := redistest.Command(s.addr, "INFO", "commandstats")
	if err != nil {
		return nil, fmt.Errorf("redis INFO commandstats: %w", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out, nil
}
