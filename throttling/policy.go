package throttling

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rs/zerolog"
)

// Policy decides how fast one scope goes: its configured delay and
// concurrency (or a robots.txt Crawl-delay), backoff with linear recovery
// and the burst rule (backoff.go), Retry-After pacing, rampup (rampup.go).
// It is the Go half of the default scope manager; the Gate (gate.go) is
// the mechanical half that admits requests. The Policy never sees a send
// or a completion directly: it reads the gate's counters when it is
// ticked or given feedback, and writes the gate's parameters (Params).
//
// Its state round-trips through PolicyState (State, SetState), so a
// distributed throttler can keep it in shared storage and update it with
// optimistic concurrency, and JOBDIR can save it. Not safe for concurrent
// use.
type Policy struct {
	cfg ScopeConfig
	rnd *rand.Rand
	dbg zerolog.Logger

	baseDelay time.Duration // configured delay (or robots.txt Crawl-delay)
	baseConc  int           // configured concurrency (or 1 from robots.txt); rampup ceiling
	rampFloor time.Duration // rampup: lowest delay allowed

	rampDelay time.Duration // rampup: current delay
	conc      int           // current concurrency limit (0 = unlimited)

	backoffState
	rampState
	rateState
	gapState
	latencyState
}

// Signal is what one outcome tells a scope's Policy (OnFeedback).
type Signal struct {
	// Trigger: the outcome is a backoff trigger for the scope.
	Trigger bool
	// SentAt is when the request was sent; zero for signals not tied to a
	// request (DelayScope). Triggers from requests sent before the scope's
	// latest backoff step count toward that step (the burst rule).
	SentAt time.Time
	// Delay, when positive, is a hard minimum announced by the server
	// (Retry-After, RateLimit-Reset) or asked by DelayScope.
	Delay time.Duration
	// Uncapped exempts Delay from the scope's max_delay (DelayScope).
	Uncapped bool
	// RateLimit is what the response's RateLimit headers said; nil when
	// none.
	RateLimit *RateLimit
	// Latency is the time from the send to the completion of a response
	// the server accepted (0 otherwise).
	Latency time.Duration
}

// empty reports whether the signal carries nothing for the policy.
func (s Signal) empty() bool {
	return !s.Trigger && s.Delay <= 0 && s.RateLimit == nil && s.Latency <= 0
}

// NewPolicy returns the policy of a scope in its configured state. env.Rand
// draws the jitter of backoff pauses (nil seeds one); env.Debug receives
// THROTTLING_DEBUG lines. Tick it once before using its Params: time-based
// rules (a rampup window) start at the first Tick.
func NewPolicy(env ScopeEnv) *Policy {
	rnd := env.Rand
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	p := &Policy{cfg: env.Config, rnd: rnd, dbg: env.Debug}
	p.baseDelay = p.cfg.Delay
	p.baseConc = p.cfg.Concurrency
	p.conc = p.baseConc
	if p.cfg.Rampup.Enabled {
		p.rampDelay = p.baseDelay
		p.rampFloor = p.cfg.Rampup.MinDelay
		p.conc = p.rampStartConcurrency()
	}
	return p
}

// rampStartConcurrency is where a rampup scope starts: min_concurrency, not
// above the configured concurrency.
func (p *Policy) rampStartConcurrency() int {
	c := max(p.cfg.MinConcurrency, 1)
	if p.baseConc > 0 {
		c = min(c, p.baseConc)
	}
	return c
}

// Config returns the scope's configuration.
func (p *Policy) Config() ScopeConfig { return p.cfg }

// Delay returns the scope's current delay (before jitter): the configured
// (or Crawl-delay) delay after backoff or rampup, the Retry-After pace and
// the rate controller's interval, whichever is longest.
func (p *Policy) Delay() time.Duration {
	d := p.levelDelay(p.baseDelay, p.level)
	if p.cfg.Rampup.Enabled {
		d = p.rampDelay
	}
	return max(d, p.pace, p.rcInterval())
}

// Rate returns the rate controller's current rate in requests per second
// and its estimate of the server's limit; zeros when it does not pace the
// scope.
func (p *Policy) Rate() (rate, estimate float64) {
	if !p.rcOn {
		return 0, 0
	}
	return p.rcRate, p.rcEst
}

// Concurrency returns the scope's current concurrency limit (0 = unlimited).
func (p *Policy) Concurrency() int { return p.conc }

// Level returns the number of backoff steps not yet recovered.
func (p *Policy) Level() int { return p.level }

// Pace returns the Retry-After pacing floor of the delay (0 = none).
func (p *Policy) Pace() time.Duration { return p.pace }

// Tick applies what the passing of time implies, given the gate's state:
// recovery after quiet windows, rampup window evaluation, pace recovery.
func (p *Policy) Tick(now time.Time, g GateState) {
	if p.cfg.Rampup.Enabled {
		p.rampTick(now, g)
	} else {
		p.recoverTick(now)
	}
	p.paceTick(now)
	p.rcTick(now, g)
	p.latTick(now, g)
}

// OnFeedback applies one outcome's signal at now (after Tick): a backoff
// trigger, a server delay, a DelayScope hold.
func (p *Policy) OnFeedback(now time.Time, sig Signal, g GateState) {
	p.Tick(now, g)
	if sig.Trigger || sig.Delay > 0 {
		p.backoff(now, sig, g)
	}
	if sig.RateLimit != nil && p.rcEnabled() {
		p.rcRateLimit(now, sig.SentAt, sig.RateLimit, g)
	}
}

// SetBaseDelay changes the configured delay (robots.txt Crawl-delay). With
// rampup, d is also the floor rampup does not go below.
func (p *Policy) SetBaseDelay(d time.Duration) {
	p.baseDelay = d
	if p.cfg.Rampup.Enabled {
		p.rampFloor = max(p.cfg.Rampup.MinDelay, d)
		p.rampDelay = max(p.rampDelay, d)
	}
}

// SetConcurrency changes the configured concurrency (robots.txt).
func (p *Policy) SetConcurrency(n int) {
	p.baseConc = n
	if p.cfg.Rampup.Enabled {
		if n > 0 {
			p.conc = min(p.conc, n)
		}
		return
	}
	p.conc = n
}

// Params returns the gate parameters the policy implies at now.
func (p *Policy) Params(now time.Time) GateParams {
	j := p.cfg.Jitter
	if p.backingOff() {
		j = p.cfg.Backoff.Jitter // BACKOFF_JITTER overrides RANDOMIZE_DOWNLOAD_DELAY during backoff and pacing
	}
	if p.rcOn && p.rcSingle() && p.rcInterval() >= p.levelDelay(p.baseDelay, p.level) {
		// The controller's interval is the delay, and a shorter gap is
		// refused (rcSingle): the jitter only lengthens it, over half its
		// range (BACKOFF_JITTER's 0.1: 0 to 5 %), so that it costs the
		// host's rate 2.5 % on average rather than 5 %.
		j[0] = max(j[0], 0)
		j[1] = max(j[0]+(j[1]-j[0])/2, j[0])
	}
	blocked := p.blockedUntil
	if p.notBefore.After(blocked) {
		blocked = p.notBefore
	}
	gp := GateParams{Delay: p.Delay(), JitterLo: j[0], JitterHi: j[1], Concurrency: p.latConcurrency(p.conc),
		BlockedUntil: blocked, Quota: p.cfg.Quota, Window: p.cfg.Window, ValidUntil: p.validUntil(), ValidUntilOK: p.rcValidUntilOK()}
	if p.rcEnabled() && !p.rcRemUntil.IsZero() {
		gp.SendLimit, gp.SendLimitUntil = p.rcSendLimit, p.rcRemUntil
	}
	return gp
}

// validUntil is the earliest time a time-based rule changes the
// parameters; zero when none is pending.
func (p *Policy) validUntil() time.Time {
	var t time.Time
	earliest := func(c time.Time) {
		if t.IsZero() || c.Before(t) {
			t = c
		}
	}
	w := p.cfg.Backoff.Window
	if p.cfg.Rampup.Enabled {
		// Before its first Tick a rampup policy has no window yet: the
		// parameters are stale at once, so that a Tick starts one.
		earliest(p.rampStart.Add(w))
	} else if p.level > 0 {
		earliest(p.quietMark.Add(w))
	}
	if p.pace > 0 {
		earliest(p.paceMark.Add(w))
	}
	if rc := p.rcValidUntil(); !rc.IsZero() {
		earliest(rc)
	}
	if lat := p.latValidUntil(); !lat.IsZero() {
		earliest(lat)
	}
	return t
}

// backingOff reports whether backoff, pacing or the rate controller slows
// the scope down.
func (p *Policy) backingOff() bool { return p.level > 0 || p.pace > 0 || p.rcOn }

// PolicyStateVersion is the version of PolicyState this package writes.
// SetState reads every earlier version (fields it lacks keep their
// configured values).
//
// Version 3 reads SendLimit as the RateLimit send budget (version 2 wrote
// a cap on requests in flight under another name, which reads as 0).
const PolicyStateVersion = 3

// PolicyState is the serializable state of a Policy: JSON-friendly (times
// in RFC 3339, durations as integer nanoseconds, so it round-trips
// exactly). Zero values mean "nothing learnt" for that field. A
// distributed throttler stores it and applies feedback with optimistic
// concurrency (read, apply in Go, write if unchanged); JOBDIR saves it in
// ScopeSnapshot.Policy.
type PolicyState struct {
	// Version is the PolicyStateVersion that wrote the state.
	Version int `json:"v"`

	// Level is the number of backoff steps not yet recovered.
	Level int `json:"level,omitempty"`
	// BlockedUntil ends a hard minimum (server delay, DelayScope).
	BlockedUntil time.Time `json:"blocked_until,omitzero"`
	// NotBefore ends the pause after the latest backoff step.
	NotBefore time.Time `json:"not_before,omitzero"`
	// LastTrigger and LastStep are the latest trigger and backoff step
	// (the burst rule compares sends with LastStep).
	LastTrigger time.Time `json:"last_trigger,omitzero"`
	LastStep    time.Time `json:"last_step,omitzero"`
	// QuietMark starts the current quiet window of the backoff level.
	QuietMark time.Time `json:"quiet_mark,omitzero"`
	// Pace is the Retry-After pacing floor of the delay; PaceSet is when
	// it last grew and PaceMark starts its current quiet window.
	Pace     time.Duration `json:"pace_ns,omitempty"`
	PaceSet  time.Time     `json:"pace_set,omitzero"`
	PaceMark time.Time     `json:"pace_mark,omitzero"`

	// Rampup: the current delay and concurrency limit, the current window
	// (start, triggers, the gate's send counter at its start).
	RampDelay       time.Duration `json:"ramp_delay_ns,omitempty"`
	RampConcurrency int           `json:"ramp_concurrency,omitempty"`
	RampStart       time.Time     `json:"ramp_start,omitzero"`
	RampTriggers    int           `json:"ramp_triggers,omitempty"`
	RampSendsMark   int64         `json:"ramp_sends_mark,omitempty"`

	// Rate controller (version 2): whether it paces the scope, its rate
	// and estimate of the server's limit (requests per second), a rate
	// the server announced, the probe curve's epoch and next step, the
	// latest refusal event and the recent ones (RateMarks), the RateLimit
	// "remaining" send budget (GateParams.SendLimit) and its end.
	RateOn         bool       `json:"rate_on,omitempty"`
	Rate           float64    `json:"rate,omitempty"`
	RateBase       float64    `json:"rate_base,omitempty"`
	RateBeta       float64    `json:"rate_beta,omitempty"`
	RateEstimate   float64    `json:"rate_estimate,omitempty"`
	RateCap        float64    `json:"rate_cap,omitempty"`
	RateEpoch      time.Time  `json:"rate_epoch,omitzero"`
	RateNext       time.Time  `json:"rate_next,omitzero"`
	RateEvent      time.Time  `json:"rate_event,omitzero"`
	RateMarks      []RateMark `json:"rate_marks,omitempty"`
	RateSamples    []RateMark `json:"rate_samples,omitempty"`
	RateGrowing    float64    `json:"rate_growing,omitempty"`
	RateStart      time.Time  `json:"rate_start,omitzero"`
	RateBurst      float64    `json:"rate_burst,omitempty"`
	RateError      float64    `json:"rate_error,omitempty"`
	RateLate       float64    `json:"rate_late,omitempty"`
	SendLimit      int64      `json:"send_limit,omitempty"`
	RemainingUntil time.Time  `json:"remaining_until,omitzero"`
	// The start ramp's origin and its sends until the first refusal event
	// (kept until the event's burst is measured).
	RateRampStart time.Time  `json:"rate_ramp_start,omitzero"`
	RateRampMarks []RateMark `json:"rate_ramp_marks,omitempty"`
	// The gap bounds (ratecontrol_gap.go): the bounds of the limit
	// (requests per second), the gate's refused and other counters after
	// the latest event, and the fast probe to the upper bound.
	RateGapLo      float64 `json:"rate_gap_lo,omitempty"`
	RateGapHi      float64 `json:"rate_gap_hi,omitempty"`
	RateGapRefused int64   `json:"rate_gap_refused,omitempty"`
	RateGapOther   int64   `json:"rate_gap_other,omitempty"`
	RateGapFast    bool    `json:"rate_gap_fast,omitempty"`
	RateGapCap     float64 `json:"rate_gap_cap,omitempty"`

	// Latency control (version 2): the concurrency held (0 = the
	// configured one), the trial in progress (-1 one slot less, +1 one
	// more) and the throughput before it, the throughput at the configured
	// concurrency, the end of a hold, the current
	// window's start and the gate's OK and FullSeconds counters then.
	LatencyLimit int       `json:"latency_limit,omitempty"`
	LatencyPhase int       `json:"latency_phase,omitempty"`
	LatencyBase  float64   `json:"latency_base,omitempty"`
	LatencyRef   float64   `json:"latency_ref,omitempty"`
	LatencyHold  time.Time `json:"latency_hold,omitzero"`
	LatencyStart time.Time `json:"latency_start,omitzero"`
	LatencyOK    int64     `json:"latency_ok,omitempty"`
	LatencyFull  float64   `json:"latency_full,omitempty"`
}

// State returns the policy's state.
func (p *Policy) State() PolicyState {
	s := PolicyState{Version: PolicyStateVersion,
		Level: p.level, BlockedUntil: p.blockedUntil, NotBefore: p.notBefore,
		LastTrigger: p.lastTrigger, LastStep: p.lastStep, QuietMark: p.quietMark,
		Pace: p.pace, PaceSet: p.paceSet, PaceMark: p.paceMark}
	if p.cfg.Rampup.Enabled {
		s.RampDelay, s.RampConcurrency = p.rampDelay, p.conc
		s.RampStart, s.RampTriggers, s.RampSendsMark = p.rampStart, p.rampTriggers, p.rampSendsMark
	}
	if p.rcEnabled() {
		s.RateOn, s.Rate, s.RateEstimate, s.RateCap = p.rcOn, p.rcRate, p.rcEst, p.rcCap
		s.RateBase, s.RateBeta = p.rcBase, p.rcBeta
		s.RateEpoch, s.RateNext, s.RateEvent = p.rcEpoch, p.rcNext, p.rcEvent
		s.RateMarks, s.RateSamples = slices.Clone(p.rcMarks), slices.Clone(p.rcSamples)
		s.RateGrowing, s.RateStart, s.RateBurst, s.RateError, s.RateLate = p.rcGrowing, p.rcStart, p.rcBurst, p.rcEstErr, p.rcLate
		s.SendLimit, s.RemainingUntil = p.rcSendLimit, p.rcRemUntil
		s.RateRampStart, s.RateRampMarks = p.rcRampStart, slices.Clone(p.rcRampMarks)
		s.RateGapLo, s.RateGapHi, s.RateGapRefused, s.RateGapOther = p.rcGapLo, p.rcGapHi, p.rcGapRefused, p.rcGapOther
		s.RateGapFast, s.RateGapCap = p.rcGapFast, p.rcGapCap
	}
	if p.latEnabled() {
		s.LatencyLimit, s.LatencyPhase, s.LatencyBase, s.LatencyHold = p.latLimit, p.latPhase, p.latBase, p.latHold
		s.LatencyRef = p.latRef
		s.LatencyStart, s.LatencyOK, s.LatencyFull = p.latStart, p.latMark, p.latFull
	}
	return s
}

// SetState lays a saved state over the policy's configured state. The
// current configuration wins where they disagree: pacing turned off drops
// the pace, a rampup delay stays above the rampup floor and the
// concurrency within [min_concurrency, concurrency]; rampup fields are
// ignored when the scope no longer ramps up. It fails only for a state
// written by a newer version of this package.
func (p *Policy) SetState(s PolicyState) error {
	if s.Version > PolicyStateVersion {
		return fmt.Errorf("throttling: policy state version %d is newer than this version of gocrawl reads (%d)", s.Version, PolicyStateVersion)
	}
	p.level = max(0, s.Level)
	p.blockedUntil, p.notBefore = s.BlockedUntil, s.NotBefore
	p.lastTrigger, p.lastStep, p.quietMark = s.LastTrigger, s.LastStep, s.QuietMark
	p.pace, p.paceSet, p.paceMark = max(0, s.Pace), s.PaceSet, s.PaceMark
	if !p.cfg.Backoff.RetryAfterPacing {
		p.pace = 0
	}
	if p.cfg.Rampup.Enabled {
		p.rampDelay = max(s.RampDelay, p.rampFloor)
		if s.RampConcurrency > 0 {
			p.conc = max(s.RampConcurrency, p.cfg.MinConcurrency)
			if p.baseConc > 0 {
				p.conc = min(p.conc, p.baseConc)
			}
		}
		p.rampStart, p.rampTriggers, p.rampSendsMark = s.RampStart, max(0, s.RampTriggers), s.RampSendsMark
	}
	if p.rcEnabled() {
		p.rcOn, p.rcRate, p.rcEst, p.rcCap = s.RateOn && s.Rate > 0, max(0, s.Rate), max(0, s.RateEstimate), max(0, s.RateCap)
		p.rcBase, p.rcBeta = max(0, s.RateBase), min(max(s.RateBeta, 0), 1)
		p.rcEpoch, p.rcNext, p.rcEvent = s.RateEpoch, s.RateNext, s.RateEvent
		p.rcMarks, p.rcSamples = slices.Clone(s.RateMarks), slices.Clone(s.RateSamples)
		p.rcGrowing, p.rcStart, p.rcBurst, p.rcEstErr = max(0, s.RateGrowing), s.RateStart, max(0, s.RateBurst), max(0, s.RateError)
		p.rcLate = min(max(s.RateLate, 1), rcLateMax)
		p.rcSendLimit, p.rcRemUntil = s.SendLimit, s.RemainingUntil
		p.rcRampStart, p.rcRampMarks = s.RateRampStart, nil
		if len(s.RateRampMarks) > 0 { // nil, not empty: "no ramp marks" (burstAt)
			p.rcRampMarks = slices.Clone(s.RateRampMarks)
		}
		p.rcGapLo, p.rcGapHi, p.rcGapRefused, p.rcGapOther = max(0, s.RateGapLo), max(0, s.RateGapHi), s.RateGapRefused, s.RateGapOther
		p.rcGapFast, p.rcGapCap = s.RateGapFast, max(0, s.RateGapCap)
		if s.Version < 3 {
			// Written before the send budget (a cap in flight then): at
			// most a reset's hold is lost.
			p.rcSendLimit, p.rcRemUntil = 0, time.Time{}
		}
	}
	if p.latEnabled() {
		p.latLimit, p.latPhase, p.latBase, p.latHold = max(0, s.LatencyLimit), min(max(s.LatencyPhase, -1), 1), s.LatencyBase, s.LatencyHold
		p.latRef = max(0, s.LatencyRef)
		p.latStart, p.latMark, p.latFull = s.LatencyStart, s.LatencyOK, s.LatencyFull
		if p.latLimit >= p.conc {
			p.latLimit = 0
		}
	}
	return nil
}

// since returns the growth of a gate counter from *mark, moving the mark
// back when the counter restarted (a gate recreated after a restore).
func since(cur int64, mark *int64) int64 {
	if cur < *mark {
		*mark = cur
	}
	return cur - *mark
}

func (p *Policy) debug(reason string) *zerolog.Event {
	return p.dbg.Info().Str("scope", p.cfg.Name).Str("reason", reason).
		Stringer("delay", p.Delay().Round(time.Millisecond)).Int("level", p.level).Int("concurrency", p.conc)
}
