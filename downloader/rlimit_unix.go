//go:build unix

package downloader

import "golang.org/x/sys/unix"

// raiseOpenFileLimit raises the soft RLIMIT_NOFILE to the hard limit when
// it is lower (the Go runtime does it at start too; a process started by
// another may not have been) and returns the limit now in force, the one
// before and whether it changed.
func raiseOpenFileLimit() (cur, before uint64, raised bool, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, false, err
	}
	before = r.Cur
	if r.Cur < r.Max && r.Max != unix.RLIM_INFINITY {
		up := unix.Rlimit{Cur: r.Max, Max: r.Max}
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &up) == nil {
			return r.Max, before, true, nil
		}
	}
	if r.Cur == unix.RLIM_INFINITY {
		return 0, before, false, nil
	}
	return r.Cur, before, false, nil
}
