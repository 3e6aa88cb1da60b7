package simsite

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// limiter enforces a host's LimitConfig per client key. Time is passed in,
// so tests drive it without sleeping.
type limiter struct {
	cfg LimitConfig

	mu      sync.Mutex
	clients map[string]*clientState
	first   time.Time // the host's first request: LimitConfig.Schedule counts from it
}

// clientState is what the limiter remembers about one client key.
type clientState struct {
	tokens     float64   // token bucket level
	last       time.Time // last refill
	inflight   int       // admitted and not yet released
	windowEnds time.Time // end of the current fixed window
	windowUsed int       // admissions in the current fixed window
}

// decision is the limiter's verdict on one request.
type decision struct {
	allowed bool
	// wait is, for a limited request, how long until the limiter would
	// admit it (1 s when only the concurrency limit said no).
	wait time.Duration
	// quota for the RateLimit headers: the most constraining quota, its
	// policy (policyQ units per policyW seconds), what is left of it and
	// when it resets.
	limit, remaining int
	reset            time.Duration
	policyQ, policyW int64
}

func newLimiter(cfg LimitConfig) *limiter {
	return &limiter{cfg: cfg, clients: map[string]*clientState{}}
}

// concurrencyWait is the wait announced when only the concurrency limit is
// exceeded: nothing tells when a slot frees up.
const concurrencyWait = time.Second

// admit decides on one request from client key arriving at now. An
// admitted request must be released.
func (l *limiter) admit(key string, now time.Time) decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.first.IsZero() {
		l.first = now
	}
	c, ok := l.clients[key]
	if !ok {
		c = &clientState{tokens: float64(l.cfg.Burst), last: now}
		l.clients[key] = c
	}
	d := decision{allowed: true, remaining: math.MaxInt}
	quota := func(limit, remaining int, reset time.Duration, q, w int64) {
		if remaining < d.remaining || (remaining == d.remaining && reset > d.reset) {
			d.limit, d.remaining, d.reset = limit, remaining, reset
			d.policyQ, d.policyW = q, w
		}
	}
	deny := func(wait time.Duration) {
		d.allowed = false
		d.wait = max(d.wait, wait)
	}

	cfg := l.cfg
	rate := l.rateAt(now)
	if cfg.Rate > 0 {
		if now.After(c.last) {
			c.tokens = math.Min(float64(cfg.Burst), c.tokens+l.refill(c.last, now))
			c.last = now
		}
		if c.tokens < 1 {
			deny(secondsToDuration((1 - c.tokens) / rate))
		}
	}
	if cfg.Window > 0 && cfg.WindowLimit > 0 {
		if !now.Before(c.windowEnds) {
			c.windowEnds = now.Truncate(cfg.Window).Add(cfg.Window)
			c.windowUsed = 0
		}
		if c.windowUsed >= cfg.WindowLimit {
			deny(c.windowEnds.Sub(now))
		}
	}
	if cfg.MaxConcurrent > 0 && c.inflight >= cfg.MaxConcurrent {
		deny(concurrencyWait)
	}

	if d.allowed {
		c.inflight++
		if cfg.Rate > 0 {
			c.tokens--
		}
		if cfg.Window > 0 && cfg.WindowLimit > 0 {
			c.windowUsed++
		}
	}

	// Quotas for the RateLimit headers, after this request.
	if cfg.Rate > 0 {
		rem := int(math.Floor(max(c.tokens, 0)))
		reset := secondsToDuration((float64(cfg.Burst) - c.tokens) / rate)
		if !d.allowed || rem == 0 {
			reset = secondsToDuration((1 - math.Mod(max(c.tokens, 0), 1)) / rate)
		}
		q, w := policyOfRate(rate)
		quota(cfg.Burst, rem, reset, q, w)
	}
	if cfg.Window > 0 && cfg.WindowLimit > 0 {
		quota(cfg.WindowLimit, max(cfg.WindowLimit-c.windowUsed, 0), c.windowEnds.Sub(now),
			int64(cfg.WindowLimit), max(1, ceilSeconds(cfg.Window)))
	}
	if cfg.MaxConcurrent > 0 {
		quota(cfg.MaxConcurrent, max(cfg.MaxConcurrent-c.inflight, 0), concurrencyWait, int64(cfg.MaxConcurrent), 1)
	}
	if !d.allowed {
		d.remaining = 0
		d.reset = d.wait
	}
	return d
}

// rateAt is the token bucket's rate at t (LimitConfig.Schedule).
func (l *limiter) rateAt(t time.Time) float64 {
	r := l.cfg.Rate
	for _, c := range l.cfg.Schedule {
		if t.Sub(l.first) < c.After {
			break
		}
		r = c.Rate
	}
	return r
}

// refill is the number of tokens the bucket gains from a to b, following
// the rate's schedule.
func (l *limiter) refill(a, b time.Time) float64 {
	var n float64
	for _, c := range l.cfg.Schedule {
		at := l.first.Add(c.After)
		if !at.After(a) {
			continue
		}
		if !at.Before(b) {
			break
		}
		n += at.Sub(a).Seconds() * l.rateAt(a)
		a = at
	}
	return n + b.Sub(a).Seconds()*l.rateAt(a)
}

// policyOfRate describes a rate as a quota policy of the RateLimit-Policy
// header: q requests per w whole seconds, the shortest window (up to a
// minute) in which the rate is a whole number of requests.
func policyOfRate(rate float64) (q, w int64) {
	for w = 1; w <= 60; w++ {
		x := rate * float64(w)
		if r := math.Round(x); r >= 1 && math.Abs(x-r) < 1e-6*x {
			return int64(r), w
		}
	}
	return max(1, int64(math.Round(rate*60))), 60
}

// release ends an admitted request of client key.
func (l *limiter) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.clients[key]; c != nil && c.inflight > 0 {
		c.inflight--
	}
}

func secondsToDuration(s float64) time.Duration {
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// retryAfter writes the Retry-After (and RateLimit-*) headers of an answer
// and returns the instant until which the client was asked to wait (zero
// when no Retry-After was sent).
func retryAfter(h http.Header, cfg LimitConfig, d decision, now time.Time) (until time.Time) {
	if cfg.RateLimitHeaders {
		reset := ceilSeconds(d.reset)
		if !d.allowed {
			reset = max(reset, 1)
		}
		if cfg.RateLimitFormat == RateLimitStructured {
			h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%d`, d.policyQ, d.policyW))
			h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, d.remaining, reset))
		} else {
			h.Set("RateLimit-Limit", strconv.Itoa(d.limit))
			h.Set("RateLimit-Remaining", strconv.Itoa(d.remaining))
			h.Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
		}
	}
	if d.allowed || cfg.RetryAfter == RetryAfterNone {
		return time.Time{}
	}
	wait := d.wait
	if cfg.RetryAfterValue > 0 {
		wait = cfg.RetryAfterValue
	}
	secs := max(ceilSeconds(wait), 1)
	switch cfg.RetryAfter {
	case RetryAfterHTTPDate:
		// An HTTP-date has whole seconds: round up so that a client
		// waiting until that date has waited long enough.
		until = now.Add(time.Duration(secs) * time.Second)
		if t := until.Truncate(time.Second); t.Before(until) {
			until = t.Add(time.Second)
		}
		h.Set("Retry-After", until.UTC().Format(http.TimeFormat))
	default:
		until = now.Add(time.Duration(secs) * time.Second)
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	return until
}
