package throttling

import (
	"fmt"
	"math"
	"time"

	"github.com/gocrawl/gocrawl/settings"
)

// seconds converts a non-negative number of seconds.
func seconds(v any) (time.Duration, error) {
	f, err := settings.NonNegative(settings.Float).Convert(v)
	if err != nil {
		return 0, fmt.Errorf("%v (want a non-negative number of seconds)", err)
	}
	s := f.(float64)
	if math.IsInf(s, 0) || s > 1e9 {
		return 0, fmt.Errorf("%v seconds is too large", s)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// closest returns the candidate within edit distance 2 of s, or "".
func closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := settings.EditDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
