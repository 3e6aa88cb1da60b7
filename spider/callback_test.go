package spider

import (
	"context"
	"errors"
	"testing"
)

func TestCrawlerFromContext(t *testing.T) {
	if CrawlerFrom(context.Background()) != nil {
		t.Error("crawler outside a crawl")
	}
	c := &Crawler{}
	if CrawlerFrom(WithCrawler(context.Background(), c)) != c {
		t.Error("crawler not carried")
	}
}

func TestBaseStartIsLazy(t *testing.T) {
	b := &Base{StartURLs: []string{"http://a.com/", "bad", "http://b.com/"}}
	var urls []string
	var errs int
	for req, err := range b.Start(context.Background()) {
		if err != nil {
			errs++
			continue
		}
		urls = append(urls, req.URL.String())
		break // stop after the first: the iterator must honour it
	}
	if len(urls) != 1 || errs != 0 {
		t.Errorf("got %v, %d errors", urls, errs)
	}
	var all int
	for _, err := range b.Start(context.Background()) {
		if err != nil && !errors.Is(err, ErrInvalidURL) {
			t.Errorf("invalid start URL error %v", err)
		}
		all++
	}
	if all != 3 {
		t.Errorf("yielded %d, want 3", all)
	}
}
