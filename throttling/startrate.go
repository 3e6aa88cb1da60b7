package throttling

import (
	"sync"
	"time"
)

// StartLimiter enforces MAX_STARTS_PER_SECOND at admission: a token bucket
// of MAX_STARTS_BURST tokens refilled at the given rate. Every start takes a
// token, retries and redirects included, so a retry storm cannot exceed the
// start rate. A zero rate disables it. Safe for concurrent use.
type StartLimiter struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// NewStartLimiter returns a limiter starting full (burst tokens) at now.
func NewStartLimiter(rate float64, burst int, now time.Time) *StartLimiter {
	b := float64(max(burst, 1))
	return &StartLimiter{rate: rate, burst: b, tokens: b, last: now}
}

func (l *StartLimiter) refill(now time.Time) {
	if now.After(l.last) {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
		l.last = now
	}
}

// Limits reports whether the limiter limits anything (a positive rate).
func (l *StartLimiter) Limits() bool { return l != nil && l.rate > 0 }

// Wait returns how long until a start is allowed at now (0 = now).
func (l *StartLimiter) Wait(now time.Time) time.Duration {
	if l == nil || l.rate <= 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	if l.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - l.tokens) / l.rate * float64(time.Second))
}

// Take consumes one token at now (the caller checked Wait).
func (l *StartLimiter) Take(now time.Time) {
	if l == nil || l.rate <= 0 {
		return
	}
	l.mu.Lock()
	l.refill(now)
	l.tokens--
	l.mu.Unlock()
}
