//go:build unix

package cputime

import (
	"time"

	"golang.org/x/sys/unix"
)

// Process returns the CPU time the process has used (all threads, GC
// included), from the kernel's per-process clock (exact, where getrusage
// is sampled at the scheduler's tick); 0 if the clock cannot be read.
func Process() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
