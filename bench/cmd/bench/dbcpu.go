package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The CPU time of a database server on the same machine, so that a sink's
// cost on the server can be told from its cost in the crawler: with
// BENCH_POSTGRESQL_PID set to the postmaster's pid (the first line of the
// cluster's postmaster.pid), every S1F run also reports the CPU the
// server's processes used during it (the postmaster, its live children,
// and the children it reaped).

// dbServer is the postmaster's pid (BENCH_POSTGRESQL_PID), 0 without.
var dbServer int

// dbPID returns the postmaster's pid from BENCH_POSTGRESQL_PID, or 0.
func dbPID() (int, error) {
	s := os.Getenv("BENCH_POSTGRESQL_PID")
	if s == "" {
		return 0, nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("BENCH_POSTGRESQL_PID %q is not a process id", s)
	}
	if _, err := os.Stat(filepath.Join("/proc", s)); err != nil {
		return 0, fmt.Errorf("BENCH_POSTGRESQL_PID %s: no such process", s)
	}
	return pid, nil
}

// clockTicks is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux).
const clockTicks = 100

// treeCPU returns the CPU time used so far by process pid and its
// children: its own and its reaped children's (utime, stime, cutime,
// cstime), and its live children's.
func treeCPU(pid int) (time.Duration, error) {
	f, _, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	ticks := f[13] + f[14] + f[15] + f[16] // utime, stime, cutime, cstime
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		cf, cppid, err := procStat(child)
		if err != nil || cppid != pid {
			continue // gone, or not a child
		}
		ticks += cf[13] + cf[14]
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// procStat returns the numeric fields of /proc/<pid>/stat, indexed as in
// proc(5) less 1 (f[13] is utime), and the parent's pid.
func procStat(pid int) ([]int64, int, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, 0, err
	}
	// The command name (field 2) may hold spaces: fields start after ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	rest := strings.Fields(string(b[i+1:]))
	f := make([]int64, 2+len(rest))
	for j, s := range rest {
		if j == 0 {
			continue // state
		}
		f[2+j], _ = strconv.ParseInt(s, 10, 64)
	}
	if len(f) < 17 {
		return nil, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, int(f[3]), nil
}
