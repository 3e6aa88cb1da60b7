package spider_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/spider"
)

// Quote is the item the example spider extracts.
type Quote struct {
	Text   string `json:"text"`
	Author string `json:"author"`
}

// Quotes extracts quotes and follows the "Next" link.
type Quotes struct{ spider.Base }

func (*Quotes) Name() string { return "quotes" }

func (s *Quotes) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	doc.Find("div.quote").Each(func(_ int, q *goquery.Selection) {
		out.Item(Quote{Text: q.Find("span.text").Text(), Author: q.Find("small.author").Text()})
	})
	out.FollowAll(res, doc.Find("li.next a"), s.Parse)
	return nil
}

// A callback is a plain function of a Response: test it without a crawl by
// building the Response yourself and collecting what it outputs.
func Example_testACallback() {
	page := `<html><body>
		<div class="quote"><span class="text">Be yourself.</span><small class="author">Oscar Wilde</small></div>
		<div class="quote"><span class="text">Simplicity is the soul of efficiency.</span><small class="author">Austin Freeman</small></div>
		<ul class="pager"><li class="next"><a href="/page/2/">Next</a></li></ul>
	</body></html>`
	req := spider.MustRequest("https://quotes.example/", nil)
	res := &spider.Response{URL: req.URL, Status: 200, Request: req, Body: []byte(page),
		Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}}

	var out spider.Recorder
	if err := (&Quotes{}).Parse(context.Background(), res, &out); err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, it := range out.Items {
		q := it.(Quote)
		fmt.Printf("%s (%s)\n", q.Text, strings.TrimSpace(q.Author))
	}
	for _, r := range out.Requests {
		fmt.Println("follow:", r.URL)
	}
	// Output:
	// Be yourself. (Oscar Wilde)
	// Simplicity is the soul of efficiency. (Austin Freeman)
	// follow: https://quotes.example/page/2/
}
