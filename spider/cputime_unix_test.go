//go:build unix

package spider_test

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime returns the CPU time the process has used (all threads, GC
// included), from the kernel's per-process clock (exact, where getrusage
// is sampled at the scheduler's tick). Benchmarks report it per operation
// as "cpu-ns/op" next to the wall-clock ns/op, which other work on a
// shared machine inflates.
func cpuTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
