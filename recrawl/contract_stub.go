package recrawl

// This file is a stand-in for the schedule's files (schedule.go,
// budget.go, settings.go) with the contract's exact signatures: the
// types, a Fixed policy, and settings readers that see no schedule
// setting. It is deleted when the schedule's files are merged.

import (
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
)

// Visit is what one fetch of a URL found.
type Visit struct {
	At      time.Time
	Changed bool // the content differs from the previous visit (true on the first visit)
	Gone    bool // 404 or 410
}

// Hints are what a sitemap says about a URL (zero when none).
type Hints struct {
	LastMod    time.Time
	ChangeFreq string // always, hourly, daily, weekly, monthly, yearly, never
}

// State is what the schedule remembers of a URL between visits.
type State struct {
	Interval   time.Duration // current revisit interval
	LastVisit  time.Time
	LastChange time.Time
	Due        time.Time // next visit: becomes the request's not-before time in the frontier
}

// Policy decides when a URL is visited next.
type Policy interface {
	Next(prev State, v Visit, h Hints) State
}

type fixed time.Duration

func (f fixed) Next(prev State, v Visit, _ Hints) State {
	s := prev
	s.Interval = time.Duration(f)
	s.LastVisit = v.At
	if v.Changed {
		s.LastChange = v.At
	}
	s.Due = v.At.Add(time.Duration(f))
	return s
}

// Fixed revisits every URL interval after its last visit.
func Fixed(interval time.Duration) Policy { return fixed(interval) }

// PolicyFromSettings returns the continuous mode's policy, or (nil, nil)
// when RECRAWL_INTERVAL is not a known setting or is 0.
func PolicyFromSettings(s *settings.Settings) (Policy, error) {
	if _, ok := settings.Lookup("RECRAWL_INTERVAL"); !ok {
		return nil, nil
	}
	d := s.Seconds("RECRAWL_INTERVAL")
	if d <= 0 {
		return nil, nil
	}
	return Fixed(d), nil
}

// Budget caps recrawl requests.
type Budget struct{}

// BudgetFromSettings returns nil, nil: no budget.
func BudgetFromSettings(s *settings.Settings, c clock.Clock) (*Budget, error) { return nil, nil }

// Take reports whether a revisit of scope may start now.
func (b *Budget) Take(scope string, now time.Time) (ok bool, wait time.Duration) { return true, 0 }
