package settings

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// durationSeconds is the type of the RECRAWL_*INTERVAL settings: a number
// of seconds (86400) or a duration with units ("90m", "6h", "1d12h", "7d";
// units ns, us, ms, s, m, h and d for 24 hours) or, from Go, a
// time.Duration, stored as float64
// seconds so that Settings.Seconds reads it. Negative values are refused.
var durationSeconds = NewType(`duration (seconds, or "90m", "6h", "7d")`, func(v any) (any, error) {
	if d, ok := v.(time.Duration); ok { // a spider's settings, in Go
		v = d.Seconds()
	}
	if s, ok := v.(string); ok {
		s = strings.TrimSpace(s)
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			d, err := parseDuration(s)
			if err != nil {
				return nil, err
			}
			v = d.Seconds()
		}
	}
	return NonNegative(Float).Convert(v)
})

// parseDuration is time.ParseDuration with one more unit, d for 24 hours,
// which revisit intervals and budgets need: "7d", "1d12h", "90m". A
// negative duration is an error, and so is one longer than MaxSeconds.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q is negative", s)
	}
	var days float64
	rest := s
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || n < 0 || math.IsInf(n, 0) {
			return 0, fmt.Errorf("%q is not a duration; write seconds (3600) or a number with units: 90m, 6h, 7d, 1d12h", s)
		}
		days, rest = n, s[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d < 0 {
			return 0, fmt.Errorf("%q is not a duration; write seconds (3600) or a number with units: 90m, 6h, 7d, 1d12h", s)
		}
	}
	if days*86400+d.Seconds() > MaxSeconds {
		return 0, fmt.Errorf("%q is longer than %v seconds (about 31 years)", s, MaxSeconds)
	}
	return Duration(days*86400) + d, nil
}

// recrawlSchedule is RECRAWL_SCHEDULE's type: adaptive or fixed, stored
// lower case.
var recrawlSchedule = NewType(`"adaptive" or "fixed"`, func(v any) (any, error) {
	s, err := String.Convert(v)
	if err != nil {
		return nil, err
	}
	switch low := strings.ToLower(strings.TrimSpace(s.(string))); low {
	case "adaptive", "fixed":
		return low, nil
	}
	return nil, fmt.Errorf("%q is not a schedule; use adaptive (shrink on change, grow on no change) or fixed (every RECRAWL_INTERVAL)", s)
})

// recrawlBudget is RECRAWL_BUDGET's type, stored as the string form
// "RATE" or "KEY=RATE, KEY=RATE" (package recrawl parses and checks the
// rates): a string is kept as written, a number n is "n/h", and a mapping
// {total: 1000/h, example.com: 60/h} is written "total=1000/h,
// example.com=60/h" (keys sorted).
var recrawlBudget = NewType(`budget ("1000/h", "total=1000/h, scope=60/h", or a mapping)`, func(v any) (any, error) {
	switch x := normalize(v).(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(x), nil
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			r, err := budgetRate(x[k])
			if err != nil {
				return nil, fmt.Errorf("key %q: %v", k, err)
			}
			if strings.ContainsAny(k, ",=") || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("key %q is not a scope name", k)
			}
			parts = append(parts, k+"="+r)
		}
		return strings.Join(parts, ", "), nil
	}
	r, err := budgetRate(v)
	if err != nil {
		return nil, err
	}
	return r, nil
})

// budgetRate writes one rate of a RECRAWL_BUDGET mapping: a number of
// requests per hour, or a string as written ("60/m").
func budgetRate(v any) (string, error) {
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s), nil
	}
	f, err := Float.Convert(v)
	if err != nil {
		return "", fmt.Errorf("not a rate (write 1000/h, 60/m or a number of requests per hour)")
	}
	return strconv.FormatFloat(f.(float64), 'f', -1, 64) + "/h", nil
}

// Revisit schedule of continuous crawling (package recrawl,
// docs/recrawl.md#schedules). Their values are checked when a crawl
// starts: a zero interval, RECRAWL_MIN_INTERVAL above
// RECRAWL_MAX_INTERVAL or a budget of 0 stop it with exit status 2.
func init() {
	for _, d := range []Def{
		{Name: "RECRAWL_INTERVAL", Type: durationSeconds, Default: 0.0,
			Doc: "Continuous mode: revisit every URL, first after this long (seconds, or 90m, 6h, 7d); the crawl does not end. RECRAWL_SCHEDULE says how the interval then changes. Unset (0) = no continuous mode; an explicit 0 is an error."},
		{Name: "RECRAWL_MIN_INTERVAL", Type: durationSeconds, Default: 0.0,
			Doc: "Shortest revisit interval of the adaptive schedule: a URL is never revisited sooner after its last visit. Unset (0) = RECRAWL_INTERVAL / 24; an explicit 0 is an error."},
		{Name: "RECRAWL_MAX_INTERVAL", Type: durationSeconds, Default: 0.0,
			Doc: "Longest revisit interval of the adaptive schedule: a URL is always revisited within it, changed or not. Unset (0) = RECRAWL_INTERVAL x 30; an explicit 0 is an error."},
		{Name: "RECRAWL_SCHEDULE", Type: recrawlSchedule, Default: "adaptive",
			Doc: "How revisit intervals change: adaptive (shrink by 40% when a visit finds a change, grow by 25% when it does not, within RECRAWL_MIN_INTERVAL and RECRAWL_MAX_INTERVAL; sitemap <changefreq> and <lastmod> set the first interval) or fixed (every RECRAWL_INTERVAL)."},
		{Name: "RECRAWL_BUDGET", Type: recrawlBudget, Default: "",
			Doc: "Most revisits per period: RATE (for the whole crawl: 1000/h; units s, m, h, d) or a list of KEY=RATE where KEY is total (whole crawl), scope (each throttling scope on its own) or a scope's name (that scope), e.g. \"total=1000/h, scope=60/h, shop.example=600/h\"; also a YAML mapping. Due revisits wait for the budget. Empty = no cap; a rate of 0 is an error."},
	} {
		Register(d)
	}
}
