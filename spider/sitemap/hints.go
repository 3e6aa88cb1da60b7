package sitemap

import (
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/recrawl"
	"github.com/gocrawl/gocrawl/spider"
)

// Meta keys of the page requests the sitemap spider makes: what the
// sitemap said of the page, for the revisit schedule of continuous
// crawling (RECRAWL_INTERVAL), which reads them with PageHints. Both are
// strings, so they survive a JOBDIR or Redis queue; a spider may set them
// on requests of its own.
const (
	// MetaLastMod is the entry's <lastmod>, in RFC 3339 form; absent
	// when the entry has none (or an unreadable one).
	MetaLastMod = "sitemap_lastmod"
	// MetaChangeFreq is the entry's <changefreq> (always, hourly, daily,
	// weekly, monthly, yearly or never), lower case; absent when the
	// entry has none or another value.
	MetaChangeFreq = "sitemap_changefreq"
)

// setHints records e's <lastmod> and <changefreq> in req's meta.
func setHints(req *spider.Request, e Entry) {
	if !e.LastMod.IsZero() {
		req.Set(MetaLastMod, e.LastMod.UTC().Format(time.RFC3339Nano))
	}
	if _, ok := recrawl.ChangeFreqInterval(e.ChangeFreq); ok {
		req.Set(MetaChangeFreq, strings.ToLower(strings.TrimSpace(e.ChangeFreq)))
	}
}

// PageHints returns what the sitemap said of req's page (MetaLastMod and
// MetaChangeFreq), as the hints of the revisit schedule: zero Hints for a
// request that did not come from a sitemap. Values that cannot be read
// are left out.
func PageHints(req *spider.Request) recrawl.Hints {
	var h recrawl.Hints
	if req == nil {
		return h
	}
	if s, ok := req.Get(MetaLastMod).(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			h.LastMod = t
		}
	}
	if s, ok := req.Get(MetaChangeFreq).(string); ok {
		if _, ok := recrawl.ChangeFreqInterval(s); ok {
			h.ChangeFreq = s
		}
	}
	return h
}
