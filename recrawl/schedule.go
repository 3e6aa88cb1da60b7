package recrawl

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// Visit is what one fetch of a URL found.
type Visit struct {
	// At is when the response arrived.
	At time.Time
	// Changed reports that the content differs from the previous visit
	// (true on the first visit).
	Changed bool
	// Gone reports a 404 or 410.
	Gone bool
}

// Hints are what a sitemap says about a URL (zero when none): its
// <lastmod> and <changefreq>. Sitemaps are often wrong, so a policy only
// uses them where it has nothing better: Adaptive takes its first
// interval from them and places the next visit after the change LastMod
// dates; later intervals follow what the visits themselves found.
type Hints struct {
	// LastMod is when the page last changed, by the sitemap.
	LastMod time.Time
	// ChangeFreq is always, hourly, daily, weekly, monthly, yearly or
	// never (any case); anything else is ignored.
	ChangeFreq string
}

// State is what the schedule remembers of a URL between visits. It is
// small, and persisted (JOBDIR, Redis) next to the URL's validators; its
// fields are exported so that a codec can write them. The zero State is a
// URL never visited.
type State struct {
	// Interval is the current revisit interval.
	Interval time.Duration
	// LastVisit is when the URL was last fetched.
	LastVisit time.Time
	// LastChange is when it was last seen changed (the sitemap's
	// <lastmod> when that dates the change more precisely).
	LastChange time.Time
	// Due is the next visit: it becomes the request's not-before time in
	// the frontier, so the throttling-aware queue serves due work first
	// and never trades politeness for freshness.
	Due time.Time
}

// Policy decides when a URL is visited next. Next gets the URL's state
// after the previous visit (the zero State before the first), what this
// visit found and the sitemap's hints, and returns the new state; it
// must be a pure function of its arguments (no clock, no randomness), so
// that a schedule replays the same from a persisted state.
type Policy interface {
	Next(prev State, v Visit, h Hints) State
}

// Fixed revisits every URL interval after its last visit, whatever the
// visits find; it ignores hints. It panics if interval is not positive
// (a revisit loop without pause), as time.NewTicker does.
func Fixed(interval time.Duration) Policy {
	if interval <= 0 {
		panic(fmt.Sprintf("recrawl: Fixed interval %v is not positive", interval))
	}
	return fixed{interval}
}

type fixed struct{ d time.Duration }

func (f fixed) Next(prev State, v Visit, _ Hints) State {
	return State{Interval: f.d, LastVisit: v.At, LastChange: lastChange(prev, v, v.At), Due: v.At.Add(f.d)}
}

func lastChange(prev State, v Visit, at time.Time) time.Time {
	if v.Changed && !v.Gone {
		return at
	}
	return prev.LastChange
}

// The adaptive schedule's constants. The rule is Nutch's
// AdaptiveFetchSchedule; its factors are not Nutch's defaults (grow by
// 1.4, shrink by 0.8), which settle where about 60% of visits find a
// change: few wasted visits, but a page is stale for a large part of
// each interval. gocrawl's aim is fewer stale page-hours for a given
// request budget, and on the simulated site of bench/cmd/freshness
// (docs/recrawl.md, Schedules) 1.25 and 0.6 keep 1.56x fewer stale
// page-hours than a fixed daily interval where Nutch's factors keep
// 1.32x fewer.
const (
	// DefaultGrow multiplies the interval when a visit finds no change.
	DefaultGrow = 1.25
	// DefaultShrink multiplies the interval when a visit finds a change.
	// Growing slower than shrinking makes the interval settle where
	// about 30% of visits find a change: 0.3*ln(0.6) + 0.7*ln(1.25) = 0.
	// For a page changing at random with mean gap g, that is an interval
	// of about g/3: a page that changes daily is visited every 8 hours or
	// so, one that never changes about every Max.
	DefaultShrink = 0.6
	// SyncRate moves the next visit of a changed page earlier by this
	// fraction of the time between the change (its sitemap <lastmod>) and
	// the visit that found it (Nutch's SYNC_DELTA_RATE), so that a page
	// changing at the same time every day is visited soon after the
	// change rather than just before the next one.
	SyncRate = 0.3
)

// AdaptiveConfig configures Adaptive.
type AdaptiveConfig struct {
	// Initial is the first interval of a URL without a <changefreq> hint.
	Initial time.Duration
	// Min and Max bound every interval: a URL is never revisited sooner
	// than Min after its last visit, nor later than Max.
	Min, Max time.Duration
	// Grow (> 1) multiplies the interval after a visit that found no
	// change; 0 means DefaultGrow.
	Grow float64
	// Shrink (between 0 and 1) multiplies it after a visit that found a
	// change; 0 means DefaultShrink.
	Shrink float64
}

// Validate reports a problem of c that Adaptive would panic on.
func (c AdaptiveConfig) Validate() error {
	var errs []error
	if c.Min <= 0 {
		errs = append(errs, fmt.Errorf("minimum interval %v is not positive", c.Min))
	}
	if c.Max < c.Min {
		errs = append(errs, fmt.Errorf("maximum interval %v is below the minimum %v", c.Max, c.Min))
	}
	if c.Initial < 0 {
		errs = append(errs, fmt.Errorf("initial interval %v is negative", c.Initial))
	}
	if c.Grow != 0 && !(c.Grow > 1) || math.IsInf(c.Grow, 0) {
		errs = append(errs, fmt.Errorf("grow factor %v is not a finite number above 1", c.Grow))
	}
	if c.Shrink != 0 && !(c.Shrink > 0 && c.Shrink < 1) {
		errs = append(errs, fmt.Errorf("shrink factor %v is not between 0 and 1", c.Shrink))
	}
	return errors.Join(errs...)
}

// Adaptive is the schedule of Nutch's AdaptiveFetchSchedule: each URL
// has its own interval, multiplied by cfg.Shrink after a visit that found
// a change and by cfg.Grow after one that did not (a gone URL counts as
// unchanged: it is checked less and less often, yet a page that comes
// back is found), always within [cfg.Min, cfg.Max]. Pages that change
// often end up visited often, pages that never change about every
// cfg.Max, and a request budget goes where the changes are.
//
// The first interval comes from the sitemap's <changefreq>: the change
// gap it announces (hourly = 1 hour, daily = 24 hours, weekly = 7 days,
// monthly = 30 days, yearly = 365 days) times the fraction of its change
// gap where a page's interval settles (about 0.36 with the default
// factors: a page said to change daily starts at about 8.7 hours),
// always = cfg.Min, never = cfg.Max; without one it is cfg.Initial
// (cfg.Min when 0). A <lastmod> older than that interval lengthens it to
// the page's age, since a page unchanged for a month is unlikely to
// change tomorrow. When a visit finds a change that <lastmod> dates
// after the previous visit, the next visit comes SyncRate of the
// change's age earlier. Whatever the hints, the next visit is between
// cfg.Min and cfg.Max after this one.
//
// It panics if cfg is invalid (see AdaptiveConfig.Validate).
func Adaptive(cfg AdaptiveConfig) Policy {
	if err := cfg.Validate(); err != nil {
		panic("recrawl: Adaptive: " + err.Error())
	}
	if cfg.Grow == 0 {
		cfg.Grow = DefaultGrow
	}
	if cfg.Shrink == 0 {
		cfg.Shrink = DefaultShrink
	}
	if cfg.Initial == 0 {
		cfg.Initial = cfg.Min
	}
	// The interval settles where a visit finds a change with probability
	// p, p*ln(Shrink) + (1-p)*ln(Grow) = 0; for a page changing at random
	// with mean gap g, at g*settle, 1-exp(-settle) = p.
	p := math.Log(cfg.Grow) / (math.Log(cfg.Grow) - math.Log(cfg.Shrink))
	return adaptive{c: cfg, settle: -math.Log(1 - p)}
}

type adaptive struct {
	c      AdaptiveConfig
	settle float64 // interval / mean change gap where the interval settles
}

func (a adaptive) Next(prev State, v Visit, h Hints) State {
	changed := v.Changed && !v.Gone
	var iv float64
	switch {
	case prev.LastVisit.IsZero() || prev.Interval <= 0: // first visit, or a state without interval
		iv = float64(a.first(v.At, h))
	case changed:
		iv = float64(prev.Interval) * a.c.Shrink
	default:
		iv = float64(prev.Interval) * a.c.Grow
	}
	interval := a.clamp(iv)
	next := State{Interval: interval, LastVisit: v.At, LastChange: prev.LastChange}
	due := float64(interval)
	if changed {
		at := v.At
		// The sitemap dates the change when its <lastmod> falls between
		// the previous visit and this one.
		if lm := h.LastMod; !lm.IsZero() && lm.After(prev.LastVisit) && lm.Before(at) {
			at = lm
			due -= SyncRate * float64(v.At.Sub(lm))
		}
		next.LastChange = at
	}
	next.Due = v.At.Add(a.clamp(due))
	return next
}

// first is a URL's first interval, from its hints.
func (a adaptive) first(at time.Time, h Hints) time.Duration {
	iv, ok := ChangeFreqInterval(h.ChangeFreq)
	switch {
	case !ok:
		iv = a.c.Initial
	case iv == 0: // always
		iv = a.c.Min
	case iv < 0: // never
		iv = a.c.Max
	default:
		iv = time.Duration(float64(iv) * a.settle)
	}
	if !h.LastMod.IsZero() && h.LastMod.Before(at) {
		iv = max(iv, at.Sub(h.LastMod))
	}
	return iv
}

// clamp bounds an interval in nanoseconds (a float64, so that a factor
// applied to a corrupt or huge persisted interval cannot overflow) to
// [Min, Max].
func (a adaptive) clamp(ns float64) time.Duration {
	switch {
	case math.IsNaN(ns) || ns <= float64(a.c.Min):
		return a.c.Min
	case ns >= float64(a.c.Max):
		return a.c.Max
	}
	return time.Duration(ns)
}

// ChangeFreqInterval is the interval a sitemap <changefreq> stands for:
// hourly 1 hour, daily 24 hours, weekly 7 days, monthly 30 days, yearly
// 365 days; always is 0 and never is -1 (the policy's minimum and
// maximum). ok is false for any other value (any case is fine).
func ChangeFreqInterval(freq string) (d time.Duration, ok bool) {
	switch strings.ToLower(strings.TrimSpace(freq)) {
	case "always":
		return 0, true
	case "hourly":
		return time.Hour, true
	case "daily":
		return 24 * time.Hour, true
	case "weekly":
		return 7 * 24 * time.Hour, true
	case "monthly":
		return 30 * 24 * time.Hour, true
	case "yearly":
		return 365 * 24 * time.Hour, true
	case "never":
		return -1, true
	}
	return 0, false
}

// HintsOf returns what a sitemap said of req's page: the
// spider.MetaSitemapLastMod and spider.MetaSitemapChangeFreq meta the
// sitemap spider sets (a spider may set them on requests of its own).
// It is zero for a request without them; values that cannot be read are
// left out.
func HintsOf(req *spider.Request) Hints {
	var h Hints
	if req == nil {
		return h
	}
	if s, ok := req.Get(spider.MetaSitemapLastMod).(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			h.LastMod = t
		}
	}
	if s, ok := req.Get(spider.MetaSitemapChangeFreq).(string); ok {
		if _, ok := ChangeFreqInterval(s); ok {
			h.ChangeFreq = strings.ToLower(strings.TrimSpace(s))
		}
	}
	return h
}
