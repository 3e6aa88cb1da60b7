package spider_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spider/linkextract"
)

type colly struct {
	spider.Base
	spider.HTMLHandlers
}

func (*colly) Name() string { return "colly" }

func TestHTMLHandlers(t *testing.T) {
	s := &colly{}
	var order []string
	s.OnHTML("div.quote", func(ctx context.Context, q *goquery.Selection, res *spider.Response, out spider.Output) error {
		order = append(order, "quote:"+q.Find("span").Text())
		out.Item(q.Find("span").Text())
		return nil
	})
	s.OnHTML("li.next a[href], a.more", func(ctx context.Context, a *goquery.Selection, res *spider.Response, out spider.Output) error {
		order = append(order, "link:"+a.AttrOr("href", ""))
		out.Follow(res, a.AttrOr("href", ""), nil)
		return nil
	})
	s.OnHTML("h1", func(ctx context.Context, h *goquery.Selection, res *spider.Response, out spider.Output) error {
		return errors.New("no title")
	})
	s.OnHTML("table", func(context.Context, *goquery.Selection, *spider.Response, spider.Output) error {
		t.Error("handler ran without a match")
		return nil
	})
	body := `<h1>x</h1><div class="quote"><span>A</span></div><a class="more" href="/more">more</a>
<div class="quote"><span>B</span></div><ul><li class="next"><a href="/page/2/">next</a></li></ul><h1>y</h1>`
	req := spider.MustRequest("https://q.example/", nil)
	var out spider.Recorder
	err := s.Parse(context.Background(), htmlResponse(req, body), &out)
	if err == nil || strings.Count(err.Error(), `OnHTML("h1"): no title`) != 2 {
		t.Errorf("err = %v; want both h1 failures, named", err)
	}
	if want := []string{"quote:A", "quote:B", "link:/more", "link:/page/2/"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v (registration order, then document order)", order, want)
	}
	if len(out.Items) != 2 || len(out.Requests) != 2 || out.Requests[1].URL.String() != "https://q.example/page/2/" {
		t.Errorf("items %v requests %v", out.Items, out.Requests)
	}

	// Not HTML: nothing runs, no error.
	res := &spider.Response{URL: req.URL, Status: 200, Request: req, Body: []byte("{}"), Header: http.Header{"Content-Type": {"application/json"}}}
	if err := s.Parse(context.Background(), res, &out); err != nil {
		t.Errorf("JSON response: %v", err)
	}
}

// The handlers share one parse of the response.
func TestHTMLHandlersShareTheParse(t *testing.T) {
	var h spider.HTMLHandlers
	var docs []*goquery.Document
	var mu sync.Mutex
	for _, sel := range []string{"a", "p", "a, p"} {
		h.OnHTML(sel, func(ctx context.Context, s *goquery.Selection, res *spider.Response, out spider.Output) error {
			d, _ := res.Doc()
			mu.Lock()
			docs = append(docs, d)
			mu.Unlock()
			return nil
		})
	}
	res := htmlResponse(spider.MustRequest("https://q.example/", nil), `<a href="/">a</a><p>p</p>`)
	if err := h.Parse(context.Background(), res, &spider.Recorder{}); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 4 {
		t.Fatalf("%d calls", len(docs))
	}
	for _, d := range docs {
		if d != docs[0] {
			t.Fatal("a handler saw another parse")
		}
	}
}

func TestOnHTMLMistakesStopTheCrawlAtOpen(t *testing.T) {
	noop := func(context.Context, *goquery.Selection, *spider.Response, spider.Output) error { return nil }
	for _, tc := range []struct {
		name, selector string
		fn             spider.HTMLHandler
		want           string
	}{
		{"invalid selector", "div[", noop, `OnHTML("div["): invalid CSS selector`},
		{"nil handler", "div", nil, `OnHTML("div"): nil handler`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h spider.HTMLHandlers
			h.OnHTML("p", noop)
			h.OnHTML(tc.selector, tc.fn)
			var _ spider.Opener = &h
			if err := h.Open(context.Background(), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v, want an error containing %s", err, tc.want)
			}
			res := htmlResponse(spider.MustRequest("https://q.example/", nil), `<p>p</p>`)
			if err := h.Parse(context.Background(), res, &spider.Recorder{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v, want an error containing %s", err, tc.want)
			}
		})
	}
	var ok spider.HTMLHandlers
	ok.OnHTML("p", noop)
	if err := ok.Open(context.Background(), nil); err != nil {
		t.Errorf("Open with valid handlers: %v", err)
	}
}

func TestExtractLinksAndFollowAll(t *testing.T) {
	body := `<html><head><base href="/shop/"></head><body><a href="item/1">1</a><a href="javascript:void(0)">js</a>
<a href="mailto:a@b.c">mail</a><a href="data:text/html,x">data</a><a href="item/2#x">2</a></body></html>`
	req := spider.MustRequest("https://s.example/index.html", nil)
	req.Depth = 3
	res := htmlResponse(req, body)
	links, err := res.ExtractLinks(linkextract.MustNew(linkextract.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	var out spider.Recorder
	for _, l := range links {
		out.Follow(res, l.URL, nil)
	}
	var got []string
	for _, r := range out.Requests {
		got = append(got, r.URL.String())
		if r.Depth != 4 {
			t.Errorf("%s: depth %d", r.URL, r.Depth)
		}
	}
	if want := []string{"https://s.example/shop/item/1", "https://s.example/shop/item/2"}; !slices.Equal(got, want) || len(out.Errors) != 0 {
		t.Errorf("got %v errors %v, want %v", got, out.Errors, want)
	}
	d1, _ := res.LinkDocument()
	d2, _ := res.LinkDocument()
	if d1 != d2 {
		t.Error("LinkDocument is not cached")
	}
	jsonRes := &spider.Response{URL: req.URL, Request: req, Body: []byte("{}"), Header: http.Header{"Content-Type": {"application/json"}}}
	if _, err := jsonRes.ExtractLinks(linkextract.MustNew(linkextract.Options{})); !errors.Is(err, spider.ErrNotHTML) {
		t.Errorf("JSON: err = %v", err)
	}
}
