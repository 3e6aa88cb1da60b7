package downloader

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
)

// DefaultMemoryBudget is the body budget when DOWNLOAD_MEMORY_BUDGET is 0
// and the memory available to the process cannot be read (not Linux).
const DefaultMemoryBudget = 1 << 30

// MemoryBudget returns the body budget in bytes for a
// DOWNLOAD_MEMORY_BUDGET value v: v when positive, otherwise a quarter of
// AvailableMemory (at least 64 MiB), or DefaultMemoryBudget when that is
// unknown.
func MemoryBudget(v int64) int64 {
	if v > 0 {
		return v
	}
	if m := AvailableMemory(); m > 0 {
		return max(m/4, 64<<20)
	}
	return DefaultMemoryBudget
}

// AvailableMemory returns the memory the process may use, in bytes: the
// smaller of the machine's physical memory (/proc/meminfo) and the limit
// of its control group (cgroup v2 memory.max or v1
// memory.limit_in_bytes, the tightest along the group's ancestors), or 0
// when neither can be read.
func AvailableMemory() int64 { return availableMemory("/") }

func availableMemory(root string) int64 {
	best := memTotal(path.Join(root, "proc/meminfo"))
	for _, l := range cgroupLimits(root) {
		if l > 0 && (best == 0 || l < best) {
			best = l
		}
	}
	return best
}

// memTotal reads MemTotal from a meminfo file (kB), in bytes.
func memTotal(file string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupLimits returns the memory limits of the process's control group
// and its ancestors (v2 and v1), skipping "max" and the v1 "unlimited"
// value.
func cgroupLimits(root string) []int64 {
	data, err := os.ReadFile(path.Join(root, "proc/self/cgroup"))
	if err != nil {
		return nil
	}
	var out []int64
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var base, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			base, file = path.Join(root, "sys/fs/cgroup"), "memory.max"
		case hasController(parts[1], "memory"):
			base, file = path.Join(root, "sys/fs/cgroup/memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		// The group's own folder, each ancestor, and the mount's root (a
		// container sees its own group there).
		for dir := path.Clean("/" + parts[2]); ; dir = path.Dir(dir) {
			if l := readLimit(path.Join(base, dir, file)); l > 0 {
				out = append(out, l)
			}
			if dir == "/" {
				break
			}
		}
	}
	return out
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup limit; 0 for none.
func readLimit(file string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	v := strings.TrimSpace(string(data))
	if v == "max" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	// cgroup v1 reports "no limit" as a huge page-aligned number.
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
