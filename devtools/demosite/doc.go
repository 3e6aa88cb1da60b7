// Package demosite serves deterministic copies of the two practice sites
// of the Scrapy tutorial, quotes.toscrape.com and books.toscrape.com, with
// the same HTML structure and URL layout but generated content, so that the
// example spiders (examples/quotes, examples/books) and `gocrawl demo` run
// without internet.
//
// Quotes() serves 30 quotes by 10 authors, 10 per page (/page/1/ to
// /page/3/, "/" being page 1), an author page per author
// (/author/Albert-Einstein) and a page per tag (/tag/<tag>/page/1/).
//
// Books() serves 60 books in 4 categories: the catalogue
// (/catalogue/page-N.html, "/" and "/index.html" being page 1), category
// pages (/catalogue/category/books/<slug>_<id>/index.html, then page-2.html
// ...), and a detail page per book (/catalogue/<slug>_<id>/index.html) with
// the price in pounds, the star rating as a CSS class ("star-rating Three")
// and the stock.
//
// Both serve a robots.txt that allows everything and names the site's
// sitemap (a urlset for quotes; for books an index of a urlset and a
// .xml.gz, with <lastmod> per book), and a 404 page for any other path. Pages are generated on each request from fixed data, so every run
// sees the same site; the whole of each site crawls in well under a second
// on localhost.
//
// Mount them directly on an httptest server, or as the Content handler of
// an devtools/simsite host to add latency, rate limits and faults.
package demosite
