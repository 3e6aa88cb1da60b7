package recrawl

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("recrawl-schedule", checkSettings) }

// checkSettings is the schedule's part of settings.Validate: what
// PolicyFromSettings and BudgetFromSettings refuse, so that `gocrawl
// settings` and `gocrawl run` stop with exit status 2 before anything is
// fetched.
func checkSettings(s *settings.Settings) error {
	_, perr := PolicyFromSettings(s)
	_, berr := BudgetFromSettings(s, clock.Real)
	return errors.Join(perr, berr)
}

// Derived bounds of the adaptive schedule when RECRAWL_MIN_INTERVAL or
// RECRAWL_MAX_INTERVAL is unset: a page may come to be visited 24 times as
// often as RECRAWL_INTERVAL says (hourly for a daily interval), or 30
// times less often (monthly).
const (
	minIntervalDivisor = 24
	maxIntervalFactor  = 30
)

// PolicyFromSettings reads RECRAWL_SCHEDULE (adaptive or fixed),
// RECRAWL_INTERVAL, RECRAWL_MIN_INTERVAL and RECRAWL_MAX_INTERVAL. It
// returns (nil, nil) when RECRAWL_INTERVAL is unset (no continuous mode).
//
// An interval set to 0, RECRAWL_MIN_INTERVAL above RECRAWL_MAX_INTERVAL,
// or (adaptive) RECRAWL_INTERVAL outside them is an error of kind
// settings.ErrInvalid naming the setting and where it was set, every
// problem at once; they are checked even without RECRAWL_INTERVAL.
func PolicyFromSettings(s *settings.Settings) (Policy, error) {
	var errs []error
	read := func(name string) (d time.Duration, set bool) {
		v, _ := s.Origin(name)
		d = s.Seconds(name)
		set = v.Source != settings.SourceDefault
		if set && d <= 0 {
			errs = append(errs, settings.Invalid(s, name, "an interval of 0 would revisit without pause; give a duration such as 90m, 6h or 7d, or remove the setting"))
			set = false
		}
		return d, set
	}
	iv, ivSet := read("RECRAWL_INTERVAL")
	lo, loSet := read("RECRAWL_MIN_INTERVAL")
	hi, hiSet := read("RECRAWL_MAX_INTERVAL")
	if !loSet {
		lo = max(iv/minIntervalDivisor, time.Nanosecond)
	}
	if !hiSet {
		hi = settings.Duration(iv.Seconds() * maxIntervalFactor)
	}
	switch {
	case loSet && hiSet && lo > hi:
		errs = append(errs, settings.Invalid(s, "RECRAWL_MIN_INTERVAL",
			fmt.Sprintf("%s is above RECRAWL_MAX_INTERVAL %s; the minimum interval must not exceed the maximum", human(lo), human(hi))))
	case loSet && ivSet && !hiSet && lo > hi:
		errs = append(errs, settings.Invalid(s, "RECRAWL_MIN_INTERVAL",
			fmt.Sprintf("%s is above the maximum interval %s (RECRAWL_INTERVAL x %d, as RECRAWL_MAX_INTERVAL is unset); set RECRAWL_MAX_INTERVAL too", human(lo), human(hi), maxIntervalFactor)))
	case hiSet && ivSet && !loSet && lo > hi:
		errs = append(errs, settings.Invalid(s, "RECRAWL_MAX_INTERVAL",
			fmt.Sprintf("%s is below the minimum interval %s (RECRAWL_INTERVAL / %d, as RECRAWL_MIN_INTERVAL is unset); set RECRAWL_MIN_INTERVAL too", human(hi), human(lo), minIntervalDivisor)))
	}
	adaptive := s.String("RECRAWL_SCHEDULE") == "adaptive"
	if len(errs) == 0 && ivSet && adaptive && (iv < lo || iv > hi) {
		errs = append(errs, settings.Invalid(s, "RECRAWL_INTERVAL",
			fmt.Sprintf("%s is outside [%s, %s], the bounds of the adaptive schedule (RECRAWL_MIN_INTERVAL, RECRAWL_MAX_INTERVAL)", human(iv), human(lo), human(hi))))
	}
	if err := errors.Join(errs...); err != nil || !ivSet {
		return nil, err
	}
	if !adaptive {
		return Fixed(iv), nil
	}
	return Adaptive(AdaptiveConfig{Initial: iv, Min: lo, Max: hi}), nil
}

// BudgetFromSettings reads RECRAWL_BUDGET (see ParseBudget) and returns
// the budget, its buckets full at c.Now(); (nil, nil) when it is empty. A
// value it cannot read, or a rate of 0, is an error of kind
// settings.ErrInvalid naming the setting and where it was set.
func BudgetFromSettings(s *settings.Settings, c clock.Clock) (*Budget, error) {
	l, err := ParseBudget(s.String("RECRAWL_BUDGET"))
	if err != nil {
		return nil, settings.InvalidErr(s, "RECRAWL_BUDGET", err)
	}
	b, err := NewBudget(c, l)
	if err != nil {
		return nil, settings.InvalidErr(s, "RECRAWL_BUDGET", err)
	}
	return b, nil
}

// human writes d the way the settings are written: 7d, 1d12h, 6h, 90m.
func human(d time.Duration) string {
	day := 24 * time.Hour
	var b strings.Builder
	if d >= day {
		fmt.Fprintf(&b, "%dd", d/day)
		d %= day
		if d == 0 {
			return b.String()
		}
	}
	str := d.String()
	for _, z := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(str, z) && len(str) > len(z) {
			str = strings.TrimSuffix(str, z[1:])
		}
	}
	b.WriteString(str)
	return b.String()
}
