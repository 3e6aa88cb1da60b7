//go:build unix

package spider_test

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time the process has used (all threads, GC
// included). Benchmarks report it per operation as "cpu-ns/op" next to
// the wall-clock ns/op, which other work on a shared machine inflates.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
