// Package crawlspider crawls books.toscrape.com (or the offline copy served
// by `gocrawl demo`) with the rules of a spider.CrawlSpider instead of
// hand-written link following: one rule sends each book's detail page to
// ParseBook, another follows the sidebar's categories and the "next"
// pagination. Compare with examples/books, which does the same in Parse.
//
//	gocrawl run books_crawl -O books.jsonl
//	gocrawl run books_crawl -a start_urls=http://127.0.0.1:8080/ -O books.jsonl
package crawlspider

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spider/linkextract"
)

// DefaultStartURL is where the spider starts unless -a start_urls is given.
const DefaultStartURL = "https://books.toscrape.com/"

// Book is the item: one book's detail page.
type Book struct {
	Title    string  `json:"title"`
	Price    float64 `json:"price"`
	UPC      string  `json:"upc"`
	Category string  `json:"category"`
	URL      string  `json:"url"`
}

// Spider is the crawl spider. Create it with New.
type Spider struct {
	spider.CrawlSpider
}

// New returns the spider with its rules. The first rule that keeps a link
// gets it: a book's link in a list goes to ParseBook, and never to the
// following rule.
func New() *Spider {
	s := &Spider{}
	s.StartURLs = []string{DefaultStartURL}
	s.Rules = []spider.Rule{
		{
			// Book titles in the lists: their pages are items.
			Extractor: linkextract.MustNew(linkextract.Options{RestrictCSS: []string{"article.product_pod h3"}}),
			Callback:  s.ParseBook,
		},
		{
			// Categories and the next page: lists to follow for more books.
			Extractor: linkextract.MustNew(linkextract.Options{
				RestrictCSS: []string{"div.side_categories", "ul.pager li.next"},
				Allow:       []string{`/catalogue/category/books/`, `page-\d+\.html$`},
			}),
			Follow: true,
		},
	}
	return s
}

// Name implements spider.Spider.
func (*Spider) Name() string { return "books_crawl" }

// AllowedDomains implements spider.AllowedDomainser: the start URLs'
// hosts (-a start_urls, which spider.Base takes, points the spider at
// another copy of the site).
func (s *Spider) AllowedDomains() []string { return s.StartHosts() }

// ParseBook handles a book's detail page.
func (s *Spider) ParseBook(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	main := doc.Find("div.product_main")
	price, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(main.Find("p.price_color").First().Text()), "£"), 64)
	if err != nil {
		return fmt.Errorf("books_crawl: %s: price: %w", res.URL, err)
	}
	out.Item(Book{
		Title:    strings.TrimSpace(main.Find("h1").First().Text()),
		Price:    price,
		UPC:      strings.TrimSpace(doc.Find("table tr:first-child td").First().Text()),
		Category: strings.TrimSpace(doc.Find("ul.breadcrumb li").Eq(2).Text()),
		URL:      res.URL.String(),
	})
	return nil
}
