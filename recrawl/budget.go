package recrawl

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/clock"
)

// Limits are the rates of a Budget, in requests per hour; 0 is no cap.
type Limits struct {
	// Total caps the revisits of the whole crawl.
	Total float64
	// Scope caps the revisits of each throttling scope on its own.
	Scope float64
	// Scopes caps the named scopes, in place of Scope.
	Scopes map[string]float64
}

// ParseBudget reads RECRAWL_BUDGET's syntax: a rate alone, for the whole
// crawl, or a comma-separated list of KEY=RATE, where KEY is "total"
// (the whole crawl), "scope" (each throttling scope on its own) or the
// name of a scope (that scope, instead of "scope"):
//
//	1000/h
//	total=1000/h, scope=60/h, shop.example=10/m
//
// A RATE is a number of requests per unit: s (second), m (minute), h
// (hour) or d (day), also written sec, min, hour, day; a bare number is
// per hour. A rate must be positive: a budget of 0 would never revisit
// anything. The empty string is no budget (zero Limits).
func ParseBudget(s string) (Limits, error) {
	var l Limits
	seen := map[string]bool{}
	if strings.TrimSpace(s) == "" {
		return l, nil
	}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return Limits{}, fmt.Errorf("%q has an empty entry (a stray comma?)", s)
		}
		key, rate, found := strings.Cut(entry, "=")
		if !found {
			key, rate = "total", entry
		}
		key = strings.TrimSpace(key)
		if key == "" {
			return Limits{}, fmt.Errorf("entry %q has no scope name before =", entry)
		}
		if seen[key] {
			return Limits{}, fmt.Errorf("%q is given twice", key)
		}
		seen[key] = true
		r, err := parseRate(rate)
		if err != nil {
			return Limits{}, err
		}
		switch key {
		case "total":
			l.Total = r
		case "scope":
			l.Scope = r
		default:
			if l.Scopes == nil {
				l.Scopes = map[string]float64{}
			}
			l.Scopes[key] = r
		}
	}
	return l, nil
}

// String writes l in ParseBudget's syntax, rates per hour.
func (l Limits) String() string {
	var parts []string
	add := func(k string, r float64) {
		if r > 0 {
			parts = append(parts, k+"="+strconv.FormatFloat(r, 'f', -1, 64)+"/h")
		}
	}
	add("total", l.Total)
	add("scope", l.Scope)
	for _, k := range slices.Sorted(maps.Keys(l.Scopes)) {
		add(k, l.Scopes[k])
	}
	return strings.Join(parts, ", ")
}

var rateUnits = map[string]float64{
	"s": 3600, "sec": 3600, "second": 3600,
	"m": 60, "min": 60, "minute": 60,
	"h": 1, "hour": 1,
	"d": 1.0 / 24, "day": 1.0 / 24,
}

// parseRate reads "N/UNIT" or "N" and returns requests per hour.
func parseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	num, unit, per := strings.Cut(s, "/")
	factor := 1.0
	if per {
		f, ok := rateUnits[strings.ToLower(strings.TrimSpace(unit))]
		if !ok {
			return 0, fmt.Errorf("rate %q: unknown unit %q; use s, m, h or d (1000/h)", s, strings.TrimSpace(unit))
		}
		factor = f
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	switch {
	case err != nil || math.IsNaN(n) || math.IsInf(n, 0):
		return 0, fmt.Errorf("rate %q is not a number of requests per unit, such as 1000/h or 10/m", s)
	case n == 0:
		return 0, fmt.Errorf("rate %q is 0: nothing would ever be revisited; leave RECRAWL_BUDGET empty for no cap", s)
	case n < 0:
		return 0, fmt.Errorf("rate %q is negative", s)
	}
	return n * factor, nil
}

// Validate reports a rate of l that is negative, NaN or infinite.
func (l Limits) Validate() error {
	var errs []error
	check := func(k string, r float64) {
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			errs = append(errs, fmt.Errorf("%s: rate %v per hour is not a finite positive number", k, r))
		}
	}
	check("total", l.Total)
	check("scope", l.Scope)
	for _, k := range slices.Sorted(maps.Keys(l.Scopes)) {
		if l.Scopes[k] == 0 {
			errs = append(errs, fmt.Errorf("%s: rate 0 would never revisit the scope", k))
		}
		check(k, l.Scopes[k])
	}
	return errors.Join(errs...)
}

// BurstWindow is how much of its rate a budget's bucket holds when
// nothing was spent: a minute's worth of requests (at least one). Due
// revisits that piled up while the budget was spent are then released at
// the budget's pace, not all at once, and an idle hour does not bank an
// hour of requests.
const BurstWindow = time.Minute

// maxIdleBuckets is how many per-scope buckets a Budget keeps before it
// drops the full ones (a full bucket is the same as a new one, so
// dropping them changes nothing but memory).
const maxIdleBuckets = 4096

// Budget caps the revisits of continuous crawling with token buckets: one
// for the whole crawl and one per throttling scope, each refilled at its
// rate per hour and holding BurstWindow's worth of requests. A revisit
// takes a token from every bucket that applies to it, or waits. It runs
// on the times Take is given (a Budget never reads a clock on its own),
// so it is tested without sleeping. It is safe for concurrent use.
type Budget struct {
	mu     sync.Mutex
	limits Limits
	start  time.Time
	total  *bucket
	scopes map[string]*bucket
}

// NewBudget returns a budget of l whose buckets are full at c.Now(). It
// returns an error for a rate of l that is negative, 0 for a named scope,
// or not finite, and (nil, nil) for zero Limits: no budget.
func NewBudget(c clock.Clock, l Limits) (*Budget, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if l.Total == 0 && l.Scope == 0 && len(l.Scopes) == 0 {
		return nil, nil
	}
	l.Scopes = maps.Clone(l.Scopes)
	b := &Budget{limits: l, start: c.Now(), scopes: map[string]*bucket{}}
	if l.Total > 0 {
		b.total = newBucket(l.Total, b.start)
	}
	return b, nil
}

// Limits returns the rates of b.
func (b *Budget) Limits() Limits {
	l := b.limits
	l.Scopes = maps.Clone(l.Scopes)
	return l
}

// Take reports whether a revisit of scope may start at now, and if so
// counts it. When it may not, nothing is counted and wait says how long
// until it may (if nothing else takes the tokens meanwhile). A nil Budget
// lets everything through.
func (b *Budget) Take(scope string, now time.Time) (ok bool, wait time.Duration) {
	if b == nil {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var bs [2]*bucket
	n := 0
	if b.total != nil {
		bs[n] = b.total
		n++
	}
	if sb := b.scope(scope, now); sb != nil {
		bs[n] = sb
		n++
	}
	for _, k := range bs[:n] {
		k.refill(now)
		wait = max(wait, k.wait())
	}
	if wait > 0 {
		return false, wait
	}
	for _, k := range bs[:n] {
		k.tokens--
	}
	return true, 0
}

// scope returns scope's bucket, made full at now if new; nil when no
// rate applies to it.
func (b *Budget) scope(name string, now time.Time) *bucket {
	rate, ok := b.limits.Scopes[name]
	if !ok {
		rate = b.limits.Scope
	}
	if rate == 0 {
		return nil
	}
	if k := b.scopes[name]; k != nil {
		return k
	}
	if len(b.scopes) >= maxIdleBuckets {
		for n, k := range b.scopes {
			if k.refill(now); k.tokens >= k.size {
				delete(b.scopes, n)
			}
		}
	}
	k := newBucket(rate, now)
	b.scopes[name] = k
	return k
}

// tokenSlack absorbs the rounding of refills: a bucket that waited the
// time wait said holds a whole token even if the floating-point sum is a
// hair short.
const tokenSlack = 1e-9

// bucket is a token bucket refilled at perSec tokens per second up to
// size.
type bucket struct {
	perSec, size, tokens float64
	last                 time.Time
}

func newBucket(perHour float64, now time.Time) *bucket {
	perSec := perHour / 3600
	size := max(1, perSec*BurstWindow.Seconds())
	return &bucket{perSec: perSec, size: size, tokens: size, last: now}
}

// refill adds the tokens earned since the last refill. A time before it
// (a clock set back) earns nothing and leaves the reference alone.
func (k *bucket) refill(now time.Time) {
	if !now.After(k.last) {
		return
	}
	k.tokens = min(k.size, k.tokens+now.Sub(k.last).Seconds()*k.perSec)
	k.last = now
}

// wait is how long until the bucket holds a whole token (0 when it does),
// to the nearest nanosecond (tokenSlack makes that enough).
func (k *bucket) wait() time.Duration {
	if k.tokens >= 1-tokenSlack {
		return 0
	}
	secs := (1 - k.tokens) / k.perSec
	return time.Duration(math.Round(secs * 1e9))
}
