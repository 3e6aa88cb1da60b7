package simsite

import (
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
	// quota for the RateLimit-* headers: the most constraining quota.
	limit, remaining int
	reset            time.Duration
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
	c, ok := l.clients[key]
	if !ok {
		c = &clientState{tokens: float64(l.cfg.Burst), last: now}
		l.clients[key] = c
	}
	d := decision{allowed: true, remaining: math.MaxInt}
	quota := func(limit, remaining int, reset time.Duration) {
		if remaining < d.remaining || (remaining == d.remaining && reset > d.reset) {
			d.limit, d.remaining, d.reset = limit, remaining, reset
		}
	}
	deny := func(wait time.Duration) {
		d.allowed = false
		d.wait = max(d.wait, wait)
	}

	cfg := l.cfg
	if cfg.Rate > 0 {
		if el := now.Sub(c.last); el > 0 {
			c.tokens = math.Min(float64(cfg.Burst), c.tokens+el.Seconds()*cfg.Rate)
			c.last = now
		}
		if c.tokens < 1 {
			deny(secondsToDuration((1 - c.tokens) / cfg.Rate))
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

	// Quotas for the RateLimit-* headers, after this request.
	if cfg.Rate > 0 {
		rem := int(math.Floor(max(c.tokens, 0)))
		reset := secondsToDuration((float64(cfg.Burst) - c.tokens) / cfg.Rate)
		if !d.allowed || rem == 0 {
			reset = secondsToDuration((1 - math.Mod(max(c.tokens, 0), 1)) / cfg.Rate)
		}
		quota(cfg.Burst, rem, reset)
	}
	if cfg.Window > 0 && cfg.WindowLimit > 0 {
		quota(cfg.WindowLimit, max(cfg.WindowLimit-c.windowUsed, 0), c.windowEnds.Sub(now))
	}
	if cfg.MaxConcurrent > 0 {
		quota(cfg.MaxConcurrent, max(cfg.MaxConcurrent-c.inflight, 0), concurrencyWait)
	}
	if !d.allowed {
		d.remaining = 0
		d.reset = d.wait
	}
	return d
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
		h.Set("RateLimit-Limit", strconv.Itoa(d.limit))
		h.Set("RateLimit-Remaining", strconv.Itoa(d.remaining))
		reset := ceilSeconds(d.reset)
		if !d.allowed {
			reset = max(reset, 1)
		}
		h.Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
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
