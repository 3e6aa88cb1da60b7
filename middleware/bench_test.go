package middleware

import (
	"context"
	"net/http"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// BenchmarkDefaultDownloaderChain measures what the default downloader
// chain (every built-in enabled by default, robots.txt aside) adds to one
// request, around a fetcher that answers at once.
func BenchmarkDefaultDownloaderChain(b *testing.B) {
	t := &testing.T{}
	c, _ := newCrawler(t, &testSpider{Base: spider.Base{Domains: []string{"example.com"}}}, nil)
	ch, err := NewDownloaderChain(c, statusFetcher(200, http.Header{"Content-Type": {"text/html"}}))
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ch.Fetch(ctx, spider.MustRequest("http://www.example.com/page?id=1", nil)); err != nil {
			b.Fatal(err)
		}
	}
}
