package throttling_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// MaintenanceSpider slows the whole domain down when a page says it is
// under maintenance (a soft block that comes back as 200), and asks for
// the page again (the "Delaying a scope programmatically" example of
// Scrapy's throttling design, PR #6931).
type MaintenanceSpider struct{ spider.Base }

func (*MaintenanceSpider) Name() string { return "maintenance" }

func (s *MaintenanceSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	if strings.Contains(string(res.Body), "under maintenance") {
		// Not capped by BACKOFF_MAX_DELAY; counts as a backoff trigger.
		spider.CrawlerFrom(ctx).Throttler.DelayScope(res.Request.Host(), 10*time.Minute)
		again := res.Request.Clone()
		again.DontFilter = true
		out.Request(again)
		return nil
	}
	// Normal parsing follows.
	return nil
}

func Example_delayScope() {
	t := exampleThrottler(nil)
	crawler := &spider.Crawler{Throttler: t}
	ctx := spider.WithCrawler(context.Background(), crawler)
	req := spider.MustRequest("https://example.com/", nil)
	res := &spider.Response{URL: req.URL, Status: 200, Body: []byte("<p>We are under maintenance</p>"), Request: req}
	var out spider.Recorder
	_ = (&MaintenanceSpider{}).Parse(ctx, res, &out)

	scopes, _ := t.Scopes(ctx, req)
	fmt.Println("requests out:", len(out.Requests))
	fmt.Println("wait:", t.Wait(time.Now(), scopes).Round(time.Minute))
	// Output:
	// requests out: 1
	// wait: 10m0s
}
