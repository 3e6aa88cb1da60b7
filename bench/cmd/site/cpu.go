package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux
// for every architecture that matters here).
const clockTick = 10 * time.Millisecond

// treeCPU is the user + system time of process pid and its children (the
// nginx master and its workers), read from /proc, in clock ticks of 10 ms.
func treeCPU(pid int) (time.Duration, error) {
	total, _, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		child, err := strconv.Atoi(filepath.Base(d))
		if err != nil || child == pid {
			continue
		}
		cpu, ppid, err := procCPU(child)
		if err == nil && ppid == pid {
			total += cpu
		}
	}
	return total, nil
}

// procCPU reads utime + stime and the parent of a process.
func procCPU(pid int) (cpu time.Duration, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	ut, err2 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err3 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	return time.Duration(ut+st) * clockTick, ppid, nil
}
