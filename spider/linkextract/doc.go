// Package linkextract finds the links of a page that a crawl should
// follow, as Scrapy's LinkExtractor does: which elements and attributes to
// read, which regions of the page, which URLs, domains and file extensions
// to keep, and what to do with rel="nofollow", <base href>, duplicates and
// canonical forms.
//
// Build an Extractor once from Options and run it on every page:
//
//	products := linkextract.MustNew(linkextract.Options{
//		Allow:       []string{`/product/\d+`},
//		RestrictCSS: []string{"main"},
//	})
//
//	links, err := res.ExtractLinks(products) // in a spider callback
//
// A spider.Response prepares its parsed document for link extraction once
// (Response.LinkDocument): every extractor run on the same response shares
// one walk over the document and one resolution of each link, so several
// extractors cost little more than one. spider.CrawlSpider runs the
// extractors of its rules that way.
//
// Pages are untrusted input. Values that are not links to http(s) pages
// are dropped before any parsing: javascript:, mailto:, data:, tel: and
// other schemes (also when written with tabs or newlines inside, as
// browsers ignore them), fragment-only links ("#top"), and anything
// net/url cannot parse or that has no host. The document is walked
// without recursion, so deep nesting costs no stack.
package linkextract
