package sitemap

import (
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/recrawl"
	"github.com/gocrawl/gocrawl/spider"
)

// setHints records e's <lastmod> and <changefreq> in req's meta
// (spider.MetaSitemapLastMod, spider.MetaSitemapChangeFreq), the hints of
// the revisit schedule of continuous crawling, which recrawl.HintsOf
// reads back. A <changefreq> the schedule does not know is left out.
func setHints(req *spider.Request, e Entry) {
	if !e.LastMod.IsZero() {
		req.Set(spider.MetaSitemapLastMod, e.LastMod.UTC().Format(time.RFC3339Nano))
	}
	if _, ok := recrawl.ChangeFreqInterval(e.ChangeFreq); ok {
		req.Set(spider.MetaSitemapChangeFreq, strings.ToLower(strings.TrimSpace(e.ChangeFreq)))
	}
}
