// Package onhtml crawls quotes.toscrape.com (or the offline copy served by
// `gocrawl demo`) the way a Colly user would write it: handlers registered
// per CSS selector, all run on one parse of each page. A list page has
// div.quote elements (one Quote each) and a "Next" link; an author page has
// div.author-details (one Author). Every link followed comes back to the
// same handlers.
//
//	gocrawl run quotes_html -O quotes.jsonl
//	gocrawl run quotes_html -a start_urls=http://127.0.0.1:8080/ -O quotes.jsonl
package onhtml

import (
	"context"
	"fmt"
	"strings"

	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/spider"
)

// DefaultStartURL is where the spider starts unless -a start_urls is given.
const DefaultStartURL = "https://quotes.toscrape.com/"

// Quote is an item: one quote of a list page.
type Quote struct {
	Text   string   `json:"text"`
	Author string   `json:"author"`
	Tags   []string `json:"tags"`
}

// Author is an item: an author's page.
type Author struct {
	Name      string `json:"name"`
	Birthdate string `json:"birthdate"`
}

// Spider holds the handlers; its Parse (from spider.HTMLHandlers) runs them.
type Spider struct {
	spider.Base
	spider.HTMLHandlers
}

// New registers the handlers.
func New() *Spider {
	s := &Spider{Base: spider.Base{StartURLs: []string{DefaultStartURL}}}
	s.OnHTML("div.quote", func(ctx context.Context, q *goquery.Selection, res *spider.Response, out spider.Output) error {
		out.Item(Quote{
			Text:   strings.Trim(q.Find("span.text").Text(), "“”"),
			Author: strings.TrimSpace(q.Find("small.author").Text()),
			Tags:   q.Find("a.tag").Map(func(_ int, t *goquery.Selection) string { return t.Text() }),
		})
		return nil
	})
	// The author link of each quote, and the next page: followed back to
	// Parse (a nil callback), so these handlers run on them too. The
	// duplicate filter requests each author once.
	s.OnHTML(`div.quote a[href^="/author/"], li.next a[href]`, func(ctx context.Context, a *goquery.Selection, res *spider.Response, out spider.Output) error {
		out.Follow(res, a.AttrOr("href", ""), nil)
		return nil
	})
	s.OnHTML("div.author-details", func(ctx context.Context, d *goquery.Selection, res *spider.Response, out spider.Output) error {
		name := strings.TrimSpace(d.Find("h3.author-title").Text())
		if name == "" {
			return fmt.Errorf("quotes_html: %s: author page without a name", res.URL)
		}
		out.Item(Author{Name: name, Birthdate: strings.TrimSpace(d.Find("span.author-born-date").Text())})
		return nil
	})
	return s
}

// Name implements spider.Spider.
func (*Spider) Name() string { return "quotes_html" }

// AllowedDomains implements spider.AllowedDomainser: the start URLs'
// hosts (-a start_urls, which spider.Base takes, points the spider at
// another copy of the site).
func (s *Spider) AllowedDomains() []string { return s.StartHosts() }
