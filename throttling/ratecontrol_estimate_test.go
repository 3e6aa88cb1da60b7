package throttling

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A server's token bucket refuses once it holds less than a token, not
// none: over a cycle it accepts its burst and refill less that
// remainder. Cycles against a bucket of 5 refilled at 10/s, each sent
// from a full bucket to the first refusal at a jittered rate (±10 %, the
// gate's jitter while pacing) between 11 and 13/s: the model's estimates
// average within 3 % of 10 (9.78). Counting the accepted requests as the
// whole burst and refill read every cycle half a request short, 4.7 %
// low on average here (9.53), and the controller paced that much below
// the limit. What is left is the jitter's: a bucket drained by sends that
// come a little early now and then refuses sooner than their average
// rate says, which a window of steps does not see (less so over longer
// cycles: the estimates of a crawl's later cycles combine).
func TestRateModelCountsTheBucketsRemainder(t *testing.T) {
	const rate, burst = 10.0, 5.0
	var sum float64
	n := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 41 {
		sendRate := 11 + 0.05*float64(k)
		m := rcManager(t, "h")
		p := m.policy
		p.rcOn, p.rcBurst, p.rcEst = true, burst, rate
		epoch := t0.Add(time.Second)
		p.rcMarks = []RateMark{{At: t0, OK: 100, Pause: time.Second}}

		// The server: full at the epoch (the pause refilled it), when
		// the first request goes.
		b := &bucket{rate: rate, burst: burst}
		sent, acc := int64(0), int64(0)
		samples := []RateMark{{At: epoch, OK: 100, Sent: 100}}
		var refusedAt time.Time
		at := epoch
		for refusedAt.IsZero() {
			if sent > 0 { // each next one a jittered gap (±10 %) later
				gap := (0.9 + 0.2*rng.Float64()) / sendRate
				at = at.Add(time.Duration(gap * float64(time.Second)))
			}
			for next := samples[len(samples)-1].At.Add(time.Second); !next.After(at); next = next.Add(time.Second) {
				samples = append(samples, RateMark{At: next, OK: 100 + acc, Sent: 100 + sent})
			}
			sent++
			if ok, _ := b.admit(at); !ok {
				refusedAt = at
				break
			}
			acc++
		}
		p.rcSamples = samples
		now := refusedAt.Add(time.Millisecond)
		r, _, ok := p.rcModelEstimate(now, GateState{Sends: 100 + sent, Refused: 1})
		if !ok {
			t.Fatalf("send rate %.1f: the model found no estimate", sendRate)
		}
		sum += r
		n++
	}
	if mean := sum / float64(n); math.Abs(mean-rate) > 0.03*rate {
		t.Errorf("mean estimate %.3f over %d cycles, want %v within 3 %%", mean, n, rate)
	}
}

// The probe curve's cycle lasts at least rcMinCycle at any rate: at 50/s
// the refusal budget alone would bring a probe every 24 s, each costing
// a Retry-After second (45 of the bucket's 50 tokens). The excess the
// curve sends above the estimate stays below the burst (no refusal yet)
// for most of rcMinCycle, and passes it soon after: the probe still comes.
func TestRateControlProbeCycleHasAFloor(t *testing.T) {
	m := rcManager(t, "h")
	p := m.policy
	p.rcOn, p.rcBurst, p.rcEst, p.rcBeta = true, 5, 50, rcBetaPause
	p.rcBase, p.rcEpoch = rcBetaPause*50, t0
	excessAt := func(d time.Duration) (excess float64) {
		for x := time.Duration(0); x < d; x += rcStep {
			excess += max(0, p.rcRateAt(t0.Add(x))-p.rcEst) * rcStep.Seconds()
		}
		return excess
	}
	if e := excessAt(rcMinCycle - 5*time.Second); e >= p.rcBurst {
		t.Errorf("by %v the curve sent %.1f above the estimate, want less than the burst (%v): a probe before the cycle's floor", rcMinCycle-5*time.Second, e, p.rcBurst)
	}
	if e := excessAt(rcMinCycle + 5*time.Second); e < p.rcBurst {
		t.Errorf("by %v the curve sent only %.1f above the estimate, want the burst (%v): no probe at all", rcMinCycle+5*time.Second, e, p.rcBurst)
	}
}
