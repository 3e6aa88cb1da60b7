package report

import (
	"slices"
	"strings"
)

// Drop is how many requests of a crawl were dropped for one reason.
type Drop struct {
	// Class is the reason: "offsite", "robots.txt", "http error",
	// "depth", "duplicate", or a middleware's drop reason
	// ("redirect_max_times", ...).
	Class string `json:"class"`
	// Count is the number of requests (responses, for "http error").
	Count int64 `json:"count"`
	// Stats are the stats keys counted.
	Stats []string `json:"-"`
}

// dropClasses are the kinds of dropped requests every crawl may have, with
// the stats keys that count them, in the order the summary lists them.
var dropClasses = []Drop{
	{Class: "offsite", Stats: []string{"offsite/filtered"}},
	{Class: "robots.txt", Stats: []string{"robotstxt/forbidden", "robotstxt/unreachable_drops"}},
	{Class: "http error", Stats: []string{"httperror/response_ignored_count"}},
	{Class: "depth", Stats: []string{"scheduler/depth_limited"}},
	{Class: "duplicate", Stats: []string{"dupefilter/filtered"}},
}

// droppedElsewhere are the engine/dropped/<reason> reasons already counted
// by a class above.
var droppedElsewhere = map[string]bool{"offsite": true, "robots.txt": true, "httperror": true}

// Dropped returns the requests a crawl dropped on purpose, by class, from
// its stats: offsite, robots.txt, HTTP error statuses, DEPTH_LIMIT,
// duplicates, then any other drop reason of a middleware. Classes with no
// drop are left out.
func Dropped(st map[string]float64) []Drop {
	out := []Drop{} // [] rather than null in JSON
	for _, c := range dropClasses {
		for _, k := range c.Stats {
			c.Count += int64(st[k])
		}
		if c.Count > 0 {
			out = append(out, c)
		}
	}
	var others []string
	for k := range st {
		if r, ok := strings.CutPrefix(k, "engine/dropped/"); ok && !droppedElsewhere[r] && st[k] > 0 {
			others = append(others, r)
		}
	}
	slices.Sort(others)
	for _, r := range others {
		k := "engine/dropped/" + r
		out = append(out, Drop{Class: r, Count: int64(st[k]), Stats: []string{k}})
	}
	return out
}
