package throttling

import "time"

// The rate controller's gap bounds: what single requests tell about a
// slow server's limit (docs/throttling.md, "Strict hosts: limits below
// the delay").
//
// At a low limit a scope sends one request at a time, and the window
// estimates (ratecontrol_estimate.go) read little: the server's bucket
// fills up between two sends and loses what overflows, so a window over
// a cycle counts the scope's own pace more than the server's refill. A
// 0.5 requests/s host with a burst of 1 was estimated at 0.23 requests/s
// from one accepted request over the 4 s of a cycle. The gaps between
// two consecutive sends say more, as long as nothing else was in flight:
//
//   - A request refused g after an accepted one: the accepted one left the
//     bucket with x ≥ 0 tokens and x + R g < 1 token, so R < 1/g. This
//     holds for any burst: an upper bound of the limit.
//   - A request accepted g after an accepted one, when the server's burst
//     is 1 (measured at the first refusal: rcSingle): that one left the
//     bucket empty and R g ≥ 1, so R ≥ 1/g: a lower bound.
//
// At a refusal event the estimate is kept below the upper bound, and is
// the midpoint when both are known: the next refusal or acceptance halves
// the interval, a bisection. Until the bounds are close, the rate grows
// between events by rcGrowUnsure per request interval (rcGapProbe), so
// that the next event comes within a few requests, and no further than
// just below the upper bound. A lower bound at or above a new upper bound
// means the limit dropped: the lower bound is forgotten.
//
// Both bounds are read from the gate's counters (the latest two sends,
// the completions by class) at refusal events and at the controller's
// steps, never from an accepted answer alone, so that a scope whose
// policy is shared by several workers (a distributed crawl, which writes
// the policy only on refusals and at its steps) learns them alike.
type gapState struct {
	rcGapLo float64 // lower bound of the limit (requests per second); 0 = none
	rcGapHi float64 // upper bound from the latest refusal event's gap; 0 = none
	// rcGapRefused and rcGapOther are the gate's counters after the
	// latest refusal event: unchanged since, the requests sent after it
	// were accepted (or are in flight).
	rcGapRefused, rcGapOther int64
	// rcGapFast: the latest event's bounds were wide (rcGapProbe): the
	// rate grows without the refusal budget's stretch, up to rcGapCap.
	rcGapFast bool
	rcGapCap  float64
}

const (
	// rcGapWithin is how far apart two sends may be to bound the limit:
	// a longer gap says nothing a window would not.
	rcGapWithin = time.Minute
	// rcGapWide is the relative width of the bounds above which the probe
	// grows fast (rcGapFast).
	rcGapWide = 0.05
)

// rcSingle reports whether the server's burst is known to be one request:
// every request accepted empties its bucket, so a gap shorter than the
// limit's interval is refused whatever the average. The controller's
// interval is then a floor of every gap: its jitter only lengthens it,
// over half its range (Params), and no lateness is made up for
// (rcInterval).
func (p *Policy) rcSingle() bool {
	return p.rcBurst > 0 && p.rcBurst < 1.5 && p.rcRampMarks == nil
}

// rcGapStep reads the latest gap at one of the controller's steps: two
// sends after the latest event, both answered and accepted, nothing in
// flight.
func (p *Policy) rcGapStep(g GateState) {
	if !p.rcSingle() || g.Active != 0 || !g.HasPrev || !g.PrevSent.After(p.rcEvent) ||
		g.Refused != p.rcGapRefused || g.Other != p.rcGapOther {
		return
	}
	if gap := g.LastOnWire().Sub(g.PrevSent); gap > 0 && gap <= rcGapWithin {
		p.rcGapLo = max(p.rcGapLo, float64(time.Second)/float64(gap))
	}
}

// rcGapRefusal reads a refusal event's gap, of the request sent at sentAt
// (the gate has counted its completion): the latest send, alone in flight,
// after an accepted one sent after the previous event. It records the
// gate's counters for the next gaps.
func (p *Policy) rcGapRefusal(sentAt time.Time, g GateState) {
	p.rcGapHi = 0
	defer func() { p.rcGapRefused, p.rcGapOther = g.Refused, g.Other }()
	if sentAt.IsZero() || !g.LastSent.Equal(sentAt) || g.Active != 0 || !g.HasPrev ||
		!g.PrevSent.After(p.rcEvent) || g.Refused != p.rcGapRefused+1 || g.Other != p.rcGapOther {
		return
	}
	gap := g.LastOnWire().Sub(g.PrevSent)
	if gap <= 0 || gap > rcGapWithin {
		return
	}
	p.rcGapHi = float64(time.Second) / float64(gap)
	if p.rcGapLo >= p.rcGapHi {
		p.rcGapLo = 0 // the limit dropped
	}
}

// rcGapProbe reports, at a refusal event, whether the probe that follows
// should grow fast: single requests bound the limit (rcSingle) but not
// closely yet. Each step below a limit this low is a request lost; each
// refusal costs one request and gives an upper bound, each request
// accepted a lower one, so a few refusals close the bounds, and the
// refusal budget (rcBudget) holds from then.
func (p *Policy) rcGapProbe() bool {
	if !p.rcSingle() || p.rcGapHi <= 0 {
		return false
	}
	return p.rcGapLo <= 0 || p.rcGapHi-p.rcGapLo > rcGapWide*p.rcGapHi
}

// rcGapBound keeps a refusal event's estimate within the gap bounds, and
// returns it with its error (unchanged when no bound applies).
func (p *Policy) rcGapBound(est, estErr float64) (float64, float64) {
	hi, lo := p.rcGapHi, p.rcGapLo
	if hi <= 0 {
		return est, estErr
	}
	est = min(est, hi)
	if lo > 0 && lo < hi {
		// The limit lies between: the midpoint, whatever the windows
		// say (they count the bucket's overflow between single sends
		// as a slower refill).
		est = (lo + hi) / 2
		estErr = (hi - lo) / 2
	}
	p.debug("rate_gap").Float64("low", lo).Float64("high", hi).Float64("estimate", est).Msg("throttling: the gaps between single requests bound the limit")
	return est, estErr
}
