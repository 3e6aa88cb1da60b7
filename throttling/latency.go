package throttling

import (
	"time"
)

// latencyState is the latency part of the rate controller
// (THROTTLING_LATENCY_CONTROL, rate_control: {latency: ...}): for a server
// that never refuses but slows down under load, it holds the scope's
// concurrency where more requests in flight stop adding throughput and
// only add latency, like AutoThrottle's target concurrency, but measured.
//
// It works in windows of latWindow, and only in windows where the slots
// were the limit (every slot taken at least latBusy of the time: demand
// exceeded the concurrency). It measures the throughput of accepted
// responses at the current limit, then tries one slot less: if the
// throughput held (it lost less than half of what one slot is worth on a
// server whose latency does not grow, 1/limit of it, at most
// latTolerance, and it is within latTolerance of the throughput at the
// configured concurrency), the extra slot only added latency, and the
// lower limit stays (the next window tries one less again); if it dropped, the slot is given back and the limit held for
// latHold before it tries again. After a hold it also tries one slot
// more, kept only if it adds throughput. It acts only on scopes with a
// finite configured concurrency above one, never goes below
// min_concurrency, and never above the configured concurrency.
type latencyState struct {
	latLimit int       // the concurrency held; 0 = the configured one
	latPhase int       // 0: measure at the limit; -1: trying one less; +1: trying one more
	latBase  float64   // throughput measured at the limit before the trial
	latRef   float64   // throughput measured at the configured concurrency (0: not yet)
	latHold  time.Time // no trial before this
	latStart time.Time // the current window's start
	latMark  int64     // the gate's OK count then
	latFull  float64   // and its FullSeconds
}

const (
	latWindow    = 2 * time.Second
	latTolerance = 0.05
	latHoldFor   = 30 * time.Second
	latBusy      = 0.5
	// latMinN accepted responses make a window count.
	latMinN = 20
)

// latEnabled reports whether latency control applies to the scope.
func (p *Policy) latEnabled() bool {
	return p.cfg.RateControl.Enabled && p.cfg.RateControl.Latency && p.baseConc > 1 && !p.cfg.Rampup.Enabled
}

// latCurrent is the limit in force.
func (p *Policy) latCurrent() int {
	if p.latLimit > 0 {
		return p.latLimit
	}
	return p.conc
}

// latTick evaluates the window that ended before now.
func (p *Policy) latTick(now time.Time, g GateState) {
	if !p.latEnabled() {
		p.latLimit, p.latPhase = 0, 0
		return
	}
	if p.latStart.IsZero() || g.OK < p.latMark || p.rcRamp > 0 {
		// The first window starts after the rate controller's start ramp
		// (which paces the scope, so its throughput says nothing of slots).
		p.latStart, p.latMark, p.latFull = now, g.OK, g.FullSeconds
		return
	}
	if now.Sub(p.latStart) < latWindow {
		return
	}
	dt := now.Sub(p.latStart).Seconds()
	n := g.OK - p.latMark
	busy := (g.FullSeconds - p.latFull) / dt
	p.latStart, p.latMark, p.latFull = now, g.OK, g.FullSeconds
	cur := p.latCurrent()
	if busy < latBusy || n < latMinN || p.rcOn {
		// Demand, not slots, was the limit (or the rate is paced): a
		// trial measures nothing. Give a trial's slot back.
		if p.latPhase == -1 {
			p.latSet(cur + 1)
		}
		p.latPhase = 0
		return
	}
	x := float64(n) / dt
	floor := max(p.cfg.MinConcurrency, 1)
	switch p.latPhase {
	case 0:
		p.latBase = x
		if cur >= p.conc {
			p.latRef = x
		}
		switch {
		case now.Before(p.latHold):
		case cur > floor:
			p.latPhase = -1
			p.latSet(cur - 1)
		case cur < p.conc:
			p.latPhase = +1
			p.latSet(cur + 1)
		}
	case -1:
		if p.latKeep(x, cur+1) {
			p.debug("latency").Float64("throughput", x).Float64("before", p.latBase).Int("limit", cur).
				Msg("throttling: one slot less, same throughput: keeping it")
			p.latBase, p.latPhase = x, 0
			if cur > floor {
				p.latPhase = -1
				p.latSet(cur - 1)
			}
			return
		}
		p.latSet(cur + 1)
		p.latPhase, p.latHold = 0, now.Add(latHoldFor)
		p.debug("latency").Float64("throughput", x).Float64("before", p.latBase).Int("limit", cur+1).
			Msg("throttling: one slot less lost throughput: holding")
	case +1:
		if x > p.latBase*(1+latTolerance) {
			p.latPhase, p.latBase = 0, x // the slot helps: keep it, try another next window
			return
		}
		p.latSet(cur - 1)
		p.latPhase, p.latHold = 0, now.Add(latHoldFor)
	}
}

// latKeep reports whether a throughput x measured with one slot less than
// from keeps that lower limit: x lost less than half of what one slot is
// worth where throughput grows with concurrency (1/from of it), and at
// most latTolerance; and, so that small steps cannot add up to a large
// loss, x is within latTolerance of the throughput measured at the
// configured concurrency.
func (p *Policy) latKeep(x float64, from int) bool {
	tol := min(latTolerance, 0.5/float64(max(from, 1)))
	return x >= p.latBase*(1-tol) && (p.latRef == 0 || x >= p.latRef*(1-latTolerance))
}

func (p *Policy) latSet(limit int) {
	p.latLimit = limit
	if limit >= p.conc {
		p.latLimit = 0
	}
}

// latConcurrency applies the latency limit to the concurrency c.
func (p *Policy) latConcurrency(c int) int {
	if p.latLimit > 0 && (c == 0 || p.latLimit < c) {
		return p.latLimit
	}
	return c
}

// latValidUntil is the end of the current window (zero: none).
func (p *Policy) latValidUntil() time.Time {
	if !p.latEnabled() || p.latStart.IsZero() {
		return time.Time{}
	}
	return p.latStart.Add(latWindow)
}
