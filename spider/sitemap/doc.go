// Package sitemap crawls the pages that sitemaps list, as Scrapy's
// SitemapSpider does, and parses sitemaps on their own.
//
// Embed Spider in your spider, give it sitemap URLs or the site's
// robots.txt (whose "Sitemap:" lines name the sitemaps), and route page
// URLs to callbacks with Rules:
//
//	type Shop struct{ sitemap.Spider }
//
//	func New() *Shop {
//		s := &Shop{}
//		s.SitemapURLs = []string{sitemap.RobotsTxt("https://shop.example/")}
//		s.Rules = []sitemap.Rule{{Pattern: regexp.MustCompile(`/product/`), Callback: s.ParseProduct}}
//		return s
//	}
//
// Sitemaps are untrusted input. Parse reads XML urlsets and sitemap
// indexes and text sitemaps, gzip-compressed or not, within Limits (the
// protocol's 50 MB and 50,000 URLs by default), holding at most one token
// of the file (MaxToken) besides the entries, and returns what it could
// read with any error. The spider adds a limit on how deep indexes nest
// (SITEMAP_MAX_DEPTH), skips an index's entry for itself, and logs each
// limit hit with the sitemap's URL; a malformed sitemap is an error for
// that file, not for the crawl. See docs/spiders.md.
package sitemap
