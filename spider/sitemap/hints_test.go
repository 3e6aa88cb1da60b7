package sitemap_test

import (
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/recrawl"
	"github.com/gocrawl/gocrawl/spider"
)

// Page requests carry their entry's <lastmod> and <changefreq>, which
// recrawl.HintsOf turns into the revisit schedule's hints; unreadable or unknown
// values are left out, and alternates (other URLs) get none.
func TestPageHints(t *testing.T) {
	const body = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
<url><loc>https://shop.example/a</loc><lastmod>2026-02-01T10:30:00+02:00</lastmod><changefreq> Daily </changefreq>
  <xhtml:link rel="alternate" hreflang="fr" href="https://shop.example/fr/a"/></url>
<url><loc>https://shop.example/b</loc><lastmod>2026-02-03</lastmod></url>
<url><loc>https://shop.example/c</loc><lastmod>yesterday</lastmod><changefreq>sometimes</changefreq></url>
<url><loc>https://shop.example/d</loc><changefreq>never</changefreq></url>
</urlset>`
	s := newShop()
	s.Rules = nil
	s.AlternateLinks = true
	c := newCrawl(t, nil)
	req := spider.MustRequest("https://shop.example/sitemap.xml", nil)
	var out spider.Recorder
	if err := s.ParseSitemap(c.ctx, sitemapResponse(req, "text/xml", []byte(body)), &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]recrawl.Hints{
		"https://shop.example/a":    {LastMod: time.Date(2026, 2, 1, 8, 30, 0, 0, time.UTC), ChangeFreq: "daily"},
		"https://shop.example/fr/a": {},
		"https://shop.example/b":    {LastMod: time.Date(2026, 2, 3, 0, 0, 0, 0, time.UTC)},
		"https://shop.example/c":    {},
		"https://shop.example/d":    {ChangeFreq: "never"},
	}
	if len(out.Requests) != len(want) {
		t.Fatalf("%d requests, want %d", len(out.Requests), len(want))
	}
	for _, r := range out.Requests {
		got := recrawl.HintsOf(r)
		w, ok := want[r.URL.String()]
		if !ok || !got.LastMod.Equal(w.LastMod) || got.ChangeFreq != w.ChangeFreq {
			t.Errorf("%s: hints %+v (meta %v), want %+v", r.URL, got, r.Meta, w)
		}
	}
	if h := recrawl.HintsOf(nil); h != (recrawl.Hints{}) {
		t.Errorf("HintsOf(nil) = %+v", h)
	}
	bad := spider.MustRequest("https://shop.example/x", nil).Set(spider.MetaSitemapLastMod, "2026-13-01").Set(spider.MetaSitemapChangeFreq, 7)
	if h := recrawl.HintsOf(bad); h != (recrawl.Hints{}) {
		t.Errorf("unreadable meta: %+v, want zero hints", h)
	}
}
