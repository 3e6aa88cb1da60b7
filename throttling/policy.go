package throttling

import (
	"fmt"
	"math/rand/v2"
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
}

// empty reports whether the signal carries nothing for the policy.
func (s Signal) empty() bool { return !s.Trigger && s.Delay <= 0 }

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

// Delay returns the scope's current delay (before jitter).
func (p *Policy) Delay() time.Duration {
	if p.cfg.Rampup.Enabled {
		return max(p.rampDelay, p.pace)
	}
	return max(p.levelDelay(p.baseDelay, p.level), p.pace)
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
}

// OnFeedback applies one outcome's signal at now (after Tick): a backoff
// trigger, a server delay, a DelayScope hold.
func (p *Policy) OnFeedback(now time.Time, sig Signal, g GateState) {
	p.Tick(now, g)
	if sig.empty() {
		return
	}
	p.backoff(now, sig, g)
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
	if p.level > 0 || p.pace > 0 {
		j = p.cfg.Backoff.Jitter // BACKOFF_JITTER overrides RANDOMIZE_DOWNLOAD_DELAY during backoff
	}
	blocked := p.blockedUntil
	if p.notBefore.After(blocked) {
		blocked = p.notBefore
	}
	return GateParams{Delay: p.Delay(), JitterLo: j[0], JitterHi: j[1], Concurrency: p.conc,
		BlockedUntil: blocked, Quota: p.cfg.Quota, Window: p.cfg.Window, ValidUntil: p.validUntil()}
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
	return t
}

// backingOff reports whether backoff or pacing slows the scope down.
func (p *Policy) backingOff() bool { return p.level > 0 || p.pace > 0 }

// PolicyStateVersion is the version of PolicyState this package writes.
// SetState reads every earlier version (fields it lacks keep their
// configured values).
const PolicyStateVersion = 1

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
		Float64("delay", p.Delay().Seconds()).Int("level", p.level).Int("concurrency", p.conc)
}
