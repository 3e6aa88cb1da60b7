// Package books is a spider for books.toscrape.com (or the offline copy
// served by `gocrawl demo`): it follows the category links of the sidebar,
// the "next" pagination and every book of each list page, and emits a Book
// per detail page with its title, price, availability, rating and category.
//
// Run it with:
//
//	gocrawl run books -O books.csv
//	gocrawl run books -a start_urls=http://127.0.0.1:8080/ -O books.csv
package books

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gocrawl/gocrawl/spider"
)

// DefaultStartURL is where the spider starts unless -a start_urls is given.
const DefaultStartURL = "https://books.toscrape.com/"

// Book is the item: one book's detail page.
type Book struct {
	Title string `json:"title"`
	// Price in pounds, as shown ("£51.77" is 51.77).
	Price float64 `json:"price"`
	// Availability is the text shown, e.g. "In stock (22 available)".
	Availability string `json:"availability"`
	// Stock is the number of copies available (0 when out of stock).
	Stock int `json:"stock"`
	// Rating is the number of stars, 1 to 5 (0 when missing).
	Rating   int    `json:"rating"`
	Category string `json:"category"`
	UPC      string `json:"upc"`
	URL      string `json:"url"`
}

// Spider crawls a books site. Create it with New; -a start_urls points
// it at another copy of the site (spider.Base takes the argument).
type Spider struct {
	spider.Base
}

// New returns the spider with DefaultStartURL as its start URL.
func New() *Spider { return &Spider{Base: spider.Base{StartURLs: []string{DefaultStartURL}}} }

// Name implements spider.Spider.
func (*Spider) Name() string { return "books" }

// AllowedDomains implements spider.AllowedDomainser: the start URLs'
// hosts.
func (s *Spider) AllowedDomains() []string { return s.StartHosts() }

// Parse handles a list page (the catalogue or a category): it follows the
// sidebar's categories, each book and the next page. The same book is
// linked from the catalogue and its category; the duplicate filter keeps
// one request.
func (s *Spider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	out.FollowAll(res, doc.Find("div.side_categories ul li ul li a[href]"), s.Parse)
	out.FollowAll(res, doc.Find("article.product_pod h3 a[href]"), s.ParseBook)
	out.FollowAll(res, doc.Find("ul.pager li.next a[href]"), s.Parse)
	return nil
}

var stockRe = regexp.MustCompile(`\((\d+) available\)`)

// ratings maps the star-rating class word to stars.
var ratings = map[string]int{"One": 1, "Two": 2, "Three": 3, "Four": 4, "Five": 5}

// ParseBook handles a book's detail page.
func (s *Spider) ParseBook(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	main := doc.Find("div.product_main")
	if main.Length() == 0 {
		return fmt.Errorf("books: %s has no div.product_main", res.URL)
	}
	priceText := strings.TrimSpace(main.Find("p.price_color").First().Text())
	price, err := ParsePrice(priceText)
	if err != nil {
		return fmt.Errorf("books: %s: %w", res.URL, err)
	}
	avail := strings.Join(strings.Fields(main.Find("p.availability").First().Text()), " ")
	stock := 0
	if m := stockRe.FindStringSubmatch(avail); m != nil {
		stock, _ = strconv.Atoi(m[1])
	}
	rating := 0
	if class, ok := main.Find("p.star-rating").First().Attr("class"); ok {
		for _, w := range strings.Fields(class) {
			if n, ok := ratings[w]; ok {
				rating = n
			}
		}
	}
	out.Item(Book{
		Title:        strings.TrimSpace(main.Find("h1").First().Text()),
		Price:        price,
		Availability: avail,
		Stock:        stock,
		Rating:       rating,
		Category:     strings.TrimSpace(doc.Find("ul.breadcrumb li").Eq(2).Text()),
		UPC:          strings.TrimSpace(doc.Find("table tr:first-child td").First().Text()),
		URL:          res.URL.String(),
	})
	return nil
}

// ParsePrice parses a price such as "£51.77" into 51.77.
func ParsePrice(s string) (float64, error) {
	num := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), "£$€"))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("price %q is not a number of pounds", s)
	}
	return f, nil
}
