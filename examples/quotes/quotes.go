// Package quotes is the spider of the Scrapy tutorial, in Go: it crawls
// quotes.toscrape.com (or the offline copy served by `gocrawl demo`), emits
// one Quote per quote with its text, author and tags, follows the "Next"
// pagination, and visits each author's page once to emit an Author.
//
// Run it with:
//
//	gocrawl run quotes -O quotes.jsonl
//	gocrawl run quotes -a start_urls=http://127.0.0.1:8080/ -O quotes.jsonl
package quotes

import (
	"context"
	"fmt"
	"slices"
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
	// URL is the page the quote was found on.
	URL string `json:"url"`
}

// Author is an item: the details from an author's page.
type Author struct {
	Name      string `json:"name"`
	Birthdate string `json:"birthdate"`
	// Birthplace is the place without the leading "in ".
	Birthplace string `json:"birthplace"`
	Bio        string `json:"bio"`
	URL        string `json:"url"`
}

// Spider crawls a quotes site. Create it with New; -a start_urls points
// it at another copy of the site (spider.Base takes the argument).
type Spider struct {
	spider.Base
}

// New returns the spider with DefaultStartURL as its start URL.
func New() *Spider { return &Spider{Base: spider.Base{StartURLs: []string{DefaultStartURL}}} }

// Name implements spider.Spider.
func (*Spider) Name() string { return "quotes" }

// AllowedDomains implements spider.AllowedDomainser: the start URLs'
// hosts.
func (s *Spider) AllowedDomains() []string { return s.StartHosts() }

// Parse handles a list page: a Quote per div.quote, a request for each
// author page (the duplicate filter keeps one per author) and for the next
// page.
func (s *Spider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	doc.Find("div.quote").Each(func(_ int, q *goquery.Selection) {
		var tags []string
		q.Find("div.tags a.tag").Each(func(_ int, t *goquery.Selection) {
			tags = append(tags, strings.TrimSpace(t.Text()))
		})
		out.Item(Quote{
			Text:   strings.Trim(strings.TrimSpace(q.Find("span.text").Text()), "“”\""),
			Author: strings.TrimSpace(q.Find("small.author").Text()),
			Tags:   slices.Clip(tags),
			URL:    res.URL.String(),
		})
	})
	out.FollowAll(res, doc.Find("div.quote span a[href]"), s.ParseAuthor)
	out.FollowAll(res, doc.Find("li.next a[href]"), s.Parse)
	return nil
}

// ParseAuthor handles an author page.
func (s *Spider) ParseAuthor(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	d := doc.Find("div.author-details")
	if d.Length() == 0 {
		return fmt.Errorf("quotes: %s has no div.author-details", res.URL)
	}
	out.Item(Author{
		Name:       strings.TrimSpace(d.Find("h3.author-title").Text()),
		Birthdate:  strings.TrimSpace(d.Find("span.author-born-date").Text()),
		Birthplace: strings.TrimPrefix(strings.TrimSpace(d.Find("span.author-born-location").Text()), "in "),
		Bio:        strings.TrimSpace(d.Find("div.author-description").Text()),
		URL:        res.URL.String(),
	})
	return nil
}
