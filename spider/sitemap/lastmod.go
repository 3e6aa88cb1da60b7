package sitemap

import (
	"fmt"
	"strings"
	"time"
)

// lastModLayouts are the W3C datetime forms the protocol allows, most
// precise first, and two common variants (no colon in the offset, a space
// instead of the T).
var lastModLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02",
	"2006-01",
	"2006",
}

// ParseLastMod parses a <lastmod> value in W3C datetime form: a year, a
// month, a day, or a time with minutes, seconds or fractions and a zone
// ("Z", "+02:00"). Times without a zone are taken as UTC.
func ParseLastMod(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range lastModLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("sitemap: lastmod %q is not a W3C datetime (2024-05-01 or 2024-05-01T10:00:00+02:00)", s)
}
