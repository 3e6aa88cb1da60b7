package throttling

import (
	"fmt"

	"github.com/gocrawl/gocrawl/settings"
)

// MetaAutoThrottleDontAdjustDelay is the deprecated AutoThrottle meta key;
// it is read as MetaDontTrack.
const MetaAutoThrottleDontAdjustDelay = "autothrottle_dont_adjust_delay"

// applyAutoThrottle maps the deprecated AUTOTHROTTLE_* settings onto the
// throttling settings, following the AutoThrottle migration table of
// Scrapy's throttling design (PR #6931), and records a deprecation
// warning for each one set. A mapping never overrides a throttling
// setting that was set explicitly.
//
//	AUTOTHROTTLE_ENABLED            -> nothing (throttling is always active)
//	AUTOTHROTTLE_START_DELAY        -> DOWNLOAD_DELAY
//	AUTOTHROTTLE_MAX_DELAY          -> BACKOFF_MAX_DELAY
//	AUTOTHROTTLE_TARGET_CONCURRENCY -> rampup on every scope without a "rampup" key
//	AUTOTHROTTLE_DEBUG              -> THROTTLING_DEBUG
func applyAutoThrottle(s *settings.Settings, c *Config) {
	explicit := func(name string) bool {
		v, ok := s.Origin(name)
		return ok && v.Source != settings.SourceDefault
	}
	warn := func(format string, args ...any) {
		c.Warnings = append(c.Warnings, fmt.Sprintf(format, args...))
	}
	if explicit("AUTOTHROTTLE_ENABLED") && s.Bool("AUTOTHROTTLE_ENABLED") {
		warn("AUTOTHROTTLE_ENABLED is deprecated and has no effect: throttling and backoff are always active")
	}
	if explicit("AUTOTHROTTLE_START_DELAY") {
		if explicit("DOWNLOAD_DELAY") {
			warn("AUTOTHROTTLE_START_DELAY is deprecated and ignored because DOWNLOAD_DELAY is set")
		} else {
			c.Delay = s.Seconds("AUTOTHROTTLE_START_DELAY")
			warn("AUTOTHROTTLE_START_DELAY is deprecated: using it as DOWNLOAD_DELAY (%v s)", c.Delay.Seconds())
		}
	}
	if explicit("AUTOTHROTTLE_MAX_DELAY") {
		if explicit("BACKOFF_MAX_DELAY") {
			warn("AUTOTHROTTLE_MAX_DELAY is deprecated and ignored because BACKOFF_MAX_DELAY is set")
		} else {
			c.Backoff.MaxDelay = s.Seconds("AUTOTHROTTLE_MAX_DELAY")
			c.Backoff.MinDelay = min(c.Backoff.MinDelay, c.Backoff.MaxDelay)
			warn("AUTOTHROTTLE_MAX_DELAY is deprecated: using it as BACKOFF_MAX_DELAY (%v s)", c.Backoff.MaxDelay.Seconds())
		}
	}
	if explicit("AUTOTHROTTLE_TARGET_CONCURRENCY") {
		c.RampupAll = true
		warn(`AUTOTHROTTLE_TARGET_CONCURRENCY is deprecated: enabling rampup ("rampup": true) on every scope that does not configure it`)
	}
	if explicit("AUTOTHROTTLE_DEBUG") {
		if s.Bool("AUTOTHROTTLE_DEBUG") && !explicit("THROTTLING_DEBUG") {
			c.Debug = true
		}
		warn("AUTOTHROTTLE_DEBUG is deprecated: use THROTTLING_DEBUG")
	}
}
