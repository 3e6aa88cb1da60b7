// Package sitemapspider crawls the books of books.toscrape.com's offline
// copy (served by `gocrawl demo`) from its sitemaps instead of its links:
// robots.txt names a sitemap index, which lists a sitemap of the list
// pages and a gzipped one of the books with the date each changed. Only
// book pages have a rule, so the list pages are not even requested; with
// -a since=DATE only the books changed since then are.
//
//	gocrawl run books_sitemap -a start_urls=http://127.0.0.1:8080/ -O books.jsonl
//	gocrawl run books_sitemap -a start_urls=http://127.0.0.1:8080/ -a since=2024-04-01 -O changed.jsonl
package sitemapspider

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spider/sitemap"
)

// Book is the item: one book's detail page.
type Book struct {
	Title string `json:"title"`
	Price string `json:"price"`
	UPC   string `json:"upc"`
	URL   string `json:"url"`
}

// Spider is the sitemap spider. Create it with New.
type Spider struct {
	sitemap.Spider
}

// New returns the spider; -a start_urls says which site.
func New() *Spider {
	s := &Spider{}
	s.Rules = []sitemap.Rule{
		// Detail pages: /catalogue/<slug>_<id>/index.html. Pages no rule
		// matches (the list pages) are skipped.
		{Pattern: regexp.MustCompile(`/catalogue/[^/]+_\d+/index\.html$`), Callback: s.ParseBook},
	}
	return s
}

// Name implements spider.Spider.
func (*Spider) Name() string { return "books_sitemap" }

// SetArgs implements spider.ArgsReceiver: start_urls (required), the
// sites whose robots.txt names the sitemaps, and since, a date
// (2024-04-01) to crawl only the books changed since then.
func (s *Spider) SetArgs(args map[string]string) error {
	for k, v := range args {
		switch k {
		case spider.ArgStartURLs:
			urls, err := spider.ParseStartURLs(v)
			if err != nil {
				return err
			}
			s.SitemapURLs = nil
			for _, u := range urls {
				s.SitemapURLs = append(s.SitemapURLs, sitemap.RobotsTxt(u))
			}
			s.Domains = (&spider.Base{StartURLs: urls}).StartHosts()
		case "since":
			t, err := sitemap.ParseLastMod(v)
			if err != nil {
				return fmt.Errorf("-a since: %w", err)
			}
			s.Since = t
		default:
			return fmt.Errorf("unknown argument %q (known: start_urls, since)", k)
		}
	}
	if len(s.SitemapURLs) == 0 {
		return fmt.Errorf("pass the site: -a start_urls=http://127.0.0.1:8080/ (gocrawl demo prints it)")
	}
	return nil
}

// ParseBook handles a book's detail page.
func (s *Spider) ParseBook(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	main := doc.Find("div.product_main")
	out.Item(Book{
		Title: strings.TrimSpace(main.Find("h1").First().Text()),
		Price: strings.TrimSpace(main.Find("p.price_color").First().Text()),
		UPC:   strings.TrimSpace(doc.Find("table tr:first-child td").First().Text()),
		URL:   res.URL.String(),
	})
	return nil
}
