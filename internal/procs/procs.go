// Package procs adapts GOMAXPROCS to the CPU a crawl uses
// (ADAPTIVE_GOMAXPROCS).
//
// A polite crawl spends most of its time waiting: for its hosts' delays,
// for their answers. Each of its events (an answer, a host's turn) wakes
// a goroutine, and when the process has a spare P the Go scheduler wakes a
// second thread as well, which looks for other work, finds none and goes
// back to sleep. On a crawl that uses a third of a core, that search costs
// a fifth to a third of the crawl's CPU (S4-broad, see
// docs/broad-crawls.md). With fewer Ps there is no spare P to wake.
//
// The process has one governor, which every crawl that runs with
// ADAPTIVE_GOMAXPROCS holds. The engine's loop gives it the time on its
// turns (Holder.Sample, with the real time: the CPU time is real); at
// most once per Interval it reads the process's CPU time (all threads, the
// kernel's share included) and applies Policy: one P more as soon as a
// window used more than RaiseAbove of the Ps running, one fewer after
// LowerAfter windows in a row that used less than LowerBelow of one P
// fewer; never above the value GOMAXPROCS had when the first crawl took
// hold, never below 1. A crawl that needs the cores (parsing large pages,
// a fast site) keeps them; one that waits gives the spare ones back. When
// the last crawl lets go, GOMAXPROCS gets its value back (with the
// runtime's updates to the CPU limit, when it was the runtime's default).
package procs

import (
	"os"
	"runtime"
	"sync"
	"time"
)

// The policy's defaults.
const (
	Interval   = 500 * time.Millisecond
	RaiseAbove = 0.85 // of the Ps running
	LowerBelow = 0.75 // of one P fewer
	LowerAfter = 4    // windows in a row
)

// Policy decides GOMAXPROCS from the CPU used in each window. It keeps no
// clock of its own: Step is given each sample.
type Policy struct {
	Max int // the most Ps (the value GOMAXPROCS had at the start)
	Cur int // the Ps now

	lastCPU time.Duration
	lastAt  time.Time
	started bool
	low     int // windows in a row below the lowering threshold
}

// Step takes the process's CPU time cpu at now and returns the number of
// Ps to run with from now on. A sample that is not later than the one
// before starts a new window.
func (p *Policy) Step(now time.Time, cpu time.Duration) int {
	if !p.started || !now.After(p.lastAt) {
		p.started, p.lastAt, p.lastCPU = true, now, cpu
		return p.Cur
	}
	used := float64(cpu-p.lastCPU) / float64(now.Sub(p.lastAt)) // cores
	p.lastAt, p.lastCPU = now, cpu
	switch {
	case used > RaiseAbove*float64(p.Cur) && p.Cur < p.Max:
		p.Cur++
		p.low = 0
	case p.Cur > 1 && used < LowerBelow*float64(p.Cur-1):
		p.low++
		if p.low >= LowerAfter {
			p.Cur--
			p.low = 0
		}
	default:
		p.low = 0
	}
	return p.Cur
}

// governor is the process's: GOMAXPROCS is process-wide.
var governor struct {
	mu      sync.Mutex
	holders int
	start   int // GOMAXPROCS when the first holder took hold
	policy  Policy
	cpu     func() time.Duration
	due     time.Time // the next sample
	changed bool      // GOMAXPROCS was set since the first holder came
}

// Holder is one crawl's hold on the process's governor.
type Holder struct {
	released bool // guarded by governor.mu
}

// Hold joins the process's governor, which reads the process's CPU time
// with cpu, and returns the crawl's hold on it, or nil when nothing is
// governed: the GOMAXPROCS environment variable is set (the user chose),
// there is one P only, or the process's CPU time cannot be read on this
// platform (cpu returns 0). A nil Holder's methods do nothing.
func Hold(cpu func() time.Duration) *Holder {
	if os.Getenv("GOMAXPROCS") != "" || cpu() == 0 {
		return nil
	}
	g := &governor
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holders == 0 {
		n := runtime.GOMAXPROCS(0)
		if n <= 1 {
			return nil
		}
		g.start, g.cpu = n, cpu
		g.policy = Policy{Max: n, Cur: n}
		g.due, g.changed = time.Time{}, false
	}
	g.holders++
	return &Holder{}
}

// Sample gives the governor the real time now; at most once per Interval
// it samples the CPU and applies the policy. It returns the number of Ps
// before and after: they differ when it changed GOMAXPROCS. A released
// Holder samples nothing.
func (h *Holder) Sample(now time.Time) (from, to int) {
	if h == nil {
		return 0, 0
	}
	g := &governor
	g.mu.Lock()
	defer g.mu.Unlock()
	from = g.policy.Cur
	if h.released {
		return from, from
	}
	if now.Before(g.due) && !g.due.IsZero() && g.due.Sub(now) <= Interval {
		return from, from
	}
	g.due = now.Add(Interval)
	to = g.policy.Step(now, g.cpu())
	if to != from {
		runtime.GOMAXPROCS(to)
		g.changed = true
	}
	return from, to
}

// Release lets go of the governor (once, however often it is called).
// When the last crawl lets go, GOMAXPROCS goes back to the value it had
// when the first one took hold, if the governor changed it: the runtime's
// default (which follows the CPU limit again) when that is what it was.
func (h *Holder) Release() {
	if h == nil {
		return
	}
	g := &governor
	g.mu.Lock()
	defer g.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	g.holders--
	if g.holders > 0 || !g.changed {
		return
	}
	runtime.SetDefaultGOMAXPROCS()
	if runtime.GOMAXPROCS(0) != g.start {
		runtime.GOMAXPROCS(g.start)
	}
}
