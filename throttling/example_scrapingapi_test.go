package throttling_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// ScrapingAPIManager is for a web scraping API (the "Web scraping API
// throttling" example of Scrapy's throttling design, PR #6931): requests
// to api.toscrape.com also get the scope of the site they scrape, and a
// 200 from the API that wraps an upstream 429 is a backoff trigger (for
// the target site's scope only, since the API itself is fine).
type ScrapingAPIManager struct {
	*throttling.DefaultManager
}

func (m *ScrapingAPIManager) Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error) {
	scopes, err := m.DefaultManager.Scopes(ctx, req)
	if err != nil || req.Host() != "api.toscrape.com" {
		return scopes, err
	}
	target, err := url.Parse(req.URL.Query().Get("url"))
	if err != nil || target.Host == "" {
		return scopes, nil
	}
	return throttling.AddScope(scopes, spider.HostKey(target), 0), nil
}

func (m *ScrapingAPIManager) ResponseBackoff(ctx context.Context, res *spider.Response, scopes throttling.Scopes) (throttling.Feedback, error) {
	if res.Request.Host() != "api.toscrape.com" || res.Status != http.StatusOK {
		return m.DefaultManager.ResponseBackoff(ctx, res, scopes)
	}
	upstream, err := strconv.Atoi(res.Header.Get("X-Upstream-Status-Code"))
	if err != nil {
		upstream = http.StatusOK
	}
	wrapped := &spider.Response{URL: res.URL, Status: upstream, Header: res.Header, Body: res.Body, Request: res.Request}
	fb, err := m.DefaultManager.ResponseBackoff(ctx, wrapped, scopes)
	delete(fb, "api.toscrape.com") // the API answered; only the target site is unhappy
	return fb, err
}

func init() {
	throttling.RegisterManager("ScrapingAPIManager", func(d throttling.ManagerDeps) (throttling.Manager, error) {
		return throttling.CacheScopes(&ScrapingAPIManager{DefaultManager: d.Default()}), nil
	})
}

// In gocrawl.yaml:
//
//	THROTTLING_MANAGER: ScrapingAPIManager
//	THROTTLING_SCOPES:
//	  api.toscrape.com: {concurrency: 1000, delay: 0.08}
func Example_webScrapingAPIScopes() {
	t := exampleThrottler(map[string]any{
		"THROTTLING_MANAGER": "ScrapingAPIManager",
		"THROTTLING_SCOPES":  map[string]any{"api.toscrape.com": map[string]any{"concurrency": 1000, "delay": 0.08}},
	})
	printScopes(t, "https://api.toscrape.com/?url=https://example.com/page", "https://example.com/")

	req := spider.MustRequest("https://api.toscrape.com/?url=https://example.com/page", nil)
	scopes, _ := t.Scopes(context.Background(), req)
	res := &spider.Response{URL: req.URL, Status: 200, Request: req,
		Header: http.Header{"X-Upstream-Status-Code": {"429"}}}
	fb, _ := t.Manager().ResponseBackoff(context.Background(), res, scopes)
	for _, s := range scopes {
		fmt.Printf("%s: trigger %v\n", s.Name, fb[s.Name].Trigger)
	}
	// Output:
	// https://api.toscrape.com/?url=https://example.com/page -> [api.toscrape.com example.com]
	// https://example.com/ -> [example.com]
	// api.toscrape.com: trigger false
	// example.com: trigger true
}
