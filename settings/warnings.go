package settings

import (
	"strings"
)

// Warnings returns what loading the settings noticed but did not refuse,
// in order: for now, GOCRAWL_ environment variables that name no setting.
// Commands log them once their logger exists.
func (s *Settings) Warnings() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.warnings...)
}

func (s *Settings) warn(msg string) {
	s.mu.Lock()
	s.warnings = append(s.warnings, msg)
	s.mu.Unlock()
}

// EnvTypo returns the setting that name (a GOCRAWL_ variable without its
// prefix) is almost surely a misspelling of, or "". It is stricter than
// Suggest, because a variable that is not a typo is only ignored: at most
// one edit for names of up to 7 characters, two for longer ones, and none
// for names shorter than 4 characters, and the case must be upper.
func EnvTypo(name string) string {
	if len(name) < 4 || strings.ToUpper(name) != name {
		return ""
	}
	limit := 1
	if len(name) > 7 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, n := range Names() {
		if d := EditDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
