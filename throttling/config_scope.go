package throttling

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gocrawl/gocrawl/settings"
)

// This file reads one THROTTLING_SCOPES entry (parseScope) and its
// mappings: backoff, rampup and rate_control. Global settings are read in
// config.go.

func (c *Config) parseScope(name string, raw any) (*ScopeConfig, error) {
	bad := func(key, format string, args ...any) error {
		return &ConfigError{Setting: "THROTTLING_SCOPES", Scope: name, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(name) == "" {
		return nil, &ConfigError{Setting: "THROTTLING_SCOPES", Msg: "empty scope name"}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		if raw == nil {
			m = map[string]any{}
		} else {
			return nil, &ConfigError{Setting: "THROTTLING_SCOPES", Scope: name, Msg: fmt.Sprintf("want a mapping of keys (%s), got %T", strings.Join(scopeKeys, ", "), raw)}
		}
	}
	sc := c.defaults(name)
	sc.Raw = m
	// Every problem of the entry is reported, not only the first.
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "concurrency", "min_concurrency":
			n, err := settings.NonNegative(settings.Int).Convert(v)
			if err != nil {
				errs = append(errs, bad(k, "%v (want a non-negative integer)", err))
				continue
			}
			if k == "concurrency" {
				sc.Concurrency, sc.ExplicitConcurrency = n.(int), true
			} else {
				if n.(int) < 1 {
					errs = append(errs, bad(k, "must be at least 1"))
					continue
				}
				sc.MinConcurrency = n.(int)
			}
		case "delay":
			d, err := seconds(v)
			if err != nil {
				errs = append(errs, bad(k, "%v", err))
				continue
			}
			sc.Delay, sc.ExplicitDelay = d, true
		case "jitter":
			j, err := parseJitter(v)
			if err != nil {
				errs = append(errs, bad(k, "%v", err))
				continue
			}
			sc.Jitter = j
		case "quota":
			f, err := settings.NonNegative(settings.Float).Convert(v)
			if err != nil {
				errs = append(errs, bad(k, "%v (want a non-negative number)", err))
				continue
			}
			sc.Quota = f.(float64)
		case "window":
			d, err := seconds(v)
			if err != nil {
				errs = append(errs, bad(k, "%v", err))
				continue
			}
			if d <= 0 {
				errs = append(errs, bad(k, "must be positive"))
				continue
			}
			sc.Window = d
		case "rampup":
			r, err := c.parseRampup(name, v)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			sc.Rampup = r
		case "rate_control":
			rc, err := parseRateControl(name, v, sc.RateControl)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			sc.RateControl = rc
		case "backoff":
			bm, ok := v.(map[string]any)
			if !ok {
				errs = append(errs, bad(k, "want a mapping with keys %s, got %T", strings.Join(backoffKeys, ", "), v))
				continue
			}
			if err := parseBackoff(name, bm, &sc.Backoff); err != nil {
				errs = append(errs, err)
			}
		case "manager":
			s, ok := v.(string)
			if !ok || s == "" {
				errs = append(errs, bad(k, "want the registered name of a scope manager, got %v", v))
				continue
			}
			if _, err := lookupScopeManager(s); err != nil {
				errs = append(errs, bad(k, "%v", err))
				continue
			}
			sc.Manager = s
		case "ignore_robots_txt":
			bv, err := settings.Bool.Convert(v)
			if err != nil {
				errs = append(errs, bad(k, "%v (want true or false)", err))
				continue
			}
			sc.IgnoreRobotsTxt = bv.(bool)
		default:
			msg := "unknown key (known: " + strings.Join(scopeKeys, ", ") + ")"
			if s := closest(k, scopeKeys); s != "" {
				msg = fmt.Sprintf("unknown key; did you mean %q?", s)
			}
			errs = append(errs, bad(k, "%s", msg))
			continue
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	switch {
	case sc.Rampup.Enabled && !sc.ExplicitConcurrency:
		sc.Concurrency = 0 // no ceiling of its own: rampup grows from min_concurrency
	case sc.Concurrency > 0 && sc.MinConcurrency > sc.Concurrency && sc.ExplicitConcurrency:
		return nil, bad("min_concurrency", "%d is above concurrency %d", sc.MinConcurrency, sc.Concurrency)
	case sc.Concurrency > 0 && sc.MinConcurrency > sc.Concurrency:
		return nil, bad("min_concurrency", "%d is above the scope's default concurrency %d; set concurrency, or rampup "+
			"(a rampup scope starts at min_concurrency)", sc.MinConcurrency, sc.Concurrency)
	}
	return sc, nil
}

// parseRateControl reads a scope's rate_control: true, false, or a mapping
// with enabled and latency (both default to the global settings, except
// that a mapping without enabled turns the controller on).
func parseRateControl(scope string, v any, def RateControlConfig) (RateControlConfig, error) {
	bad := func(key, format string, args ...any) error {
		k := "rate_control"
		if key != "" {
			k += "." + key
		}
		return &ConfigError{Setting: "THROTTLING_SCOPES", Scope: scope, Key: k, Msg: fmt.Sprintf(format, args...)}
	}
	switch x := v.(type) {
	case bool:
		def.Enabled = x
		if !x {
			def.Latency = false
		}
		return def, nil
	case map[string]any:
		def.Enabled = true
		var errs []error
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b, err := settings.Bool.Convert(x[k])
			if err != nil {
				errs = append(errs, bad(k, "%v (want true or false)", err))
				continue
			}
			switch k {
			case "enabled":
				def.Enabled = b.(bool)
			case "latency":
				def.Latency = b.(bool)
			default:
				msg := "unknown key (known: " + strings.Join(rateControlKeys, ", ") + ")"
				if s := closest(k, rateControlKeys); s != "" {
					msg = fmt.Sprintf("unknown key; did you mean %q?", s)
				}
				errs = append(errs, bad(k, "%s", msg))
			}
		}
		if !def.Enabled {
			def.Latency = false
		}
		return def, errors.Join(errs...)
	}
	return def, bad("", "want true, false or a mapping with keys %s, got %T", strings.Join(rateControlKeys, ", "), v)
}

func parseBackoff(scope string, m map[string]any, b *BackoffConfig) error {
	bad := func(key, format string, args ...any) error {
		return &ConfigError{Setting: "THROTTLING_SCOPES", Scope: scope, Key: "backoff." + key, Msg: fmt.Sprintf(format, args...)}
	}
	var errs []error // every problem, not only the first
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "http_codes":
			l, err := settings.IntList.Convert(v)
			if err != nil {
				errs = append(errs, bad(k, "%v (want a list of status codes)", err))
				continue
			}
			b.HTTPCodes = l.([]int)
		case "exceptions":
			l, err := settings.StringList.Convert(v)
			if err != nil {
				errs = append(errs, bad(k, "%v (want a list of error kind names)", err))
				continue
			}
			b.Exceptions = l.([]string)
		case "delay_factor":
			f, err := settings.Float.Convert(v)
			if err != nil {
				errs = append(errs, bad(k, "%v", err))
				continue
			}
			b.DelayFactor = f.(float64)
		case "max_delay", "min_delay", "window":
			d, err := seconds(v)
			if err != nil {
				errs = append(errs, bad(k, "%v", err))
				continue
			}
			switch k {
			case "max_delay":
				b.MaxDelay = d
			case "min_delay":
				b.MinDelay = d
			default:
				b.Window = d
			}
		case "jitter":
			j, err := parseJitter(v)
			if err != nil {
				errs = append(errs, bad(k, "%v", err))
				continue
			}
			b.Jitter = j
		case "retry_after_pacing":
			p, err := settings.Bool.Convert(v)
			if err != nil {
				errs = append(errs, bad(k, "%v", err))
				continue
			}
			b.RetryAfterPacing = p.(bool)
		default:
			errs = append(errs, bad(k, "unknown key (known: %s)", strings.Join(backoffKeys, ", ")))
			continue
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return b.finish(scope, "")
}

func (c *Config) parseRampup(scope string, v any) (RampupConfig, error) {
	bad := func(key, format string, args ...any) error {
		k := "rampup"
		if key != "" {
			k += "." + key
		}
		return &ConfigError{Setting: "THROTTLING_SCOPES", Scope: scope, Key: k, Msg: fmt.Sprintf(format, args...)}
	}
	r := RampupConfig{Target: c.RampupTarget, DelayFactor: DefaultRampupDelayFactor}
	switch x := v.(type) {
	case bool:
		r.Enabled = x
		return r, nil
	case map[string]any:
		r.Enabled = true
		var errs []error
		for _, k := range slices.Sorted(maps.Keys(x)) {
			val := x[k]
			switch k {
			case "backoff_target":
				t, err := settings.OneOf(settings.NonNegative(settings.Int), settings.IntPair).Convert(val)
				if err != nil {
					errs = append(errs, bad(k, "%v (want an integer or [low, high])", err))
					continue
				}
				switch tt := t.(type) {
				case int:
					r.Target = [2]int{tt, tt}
				case [2]int:
					if tt[0] < 0 {
						errs = append(errs, bad(k, "low %d is negative", tt[0]))
						continue
					}
					r.Target = tt
				}
			case "delay_factor":
				f, err := settings.Float.Convert(val)
				if err != nil {
					errs = append(errs, bad(k, "%v", err))
					continue
				}
				if ff := f.(float64); ff <= 0 || ff >= 1 {
					errs = append(errs, bad(k, "%v is not between 0 and 1 (exclusive): each rampup step multiplies the delay by it", ff))
					continue
				}
				r.DelayFactor = f.(float64)
			case "min_delay":
				d, err := seconds(val)
				if err != nil {
					errs = append(errs, bad(k, "%v", err))
					continue
				}
				r.MinDelay = d
			default:
				errs = append(errs, bad(k, "unknown key (known: %s)", strings.Join(rampupKeys, ", ")))
				continue
			}
		}
		return r, errors.Join(errs...)
	}
	return r, bad("", "want true, false or a mapping with keys %s, got %T", strings.Join(rampupKeys, ", "), v)
}
