package throttling_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// estimateCost guesses what a request to the API costs from its URL.
func estimateCost(req *spider.Request) float64 {
	if req.URL.Query().Get("render") == "1" {
		return 10
	}
	return 1
}

// CostManager caps what is spent on api.toscrape.com per window (the
// "Cost-capped throttling" example of Scrapy's throttling design, PR
// #6931): each request consumes its estimated cost of
// the "cost" scope's quota, and the actual cost reported by the API
// corrects the estimate.
type CostManager struct {
	*throttling.DefaultManager
}

func (m *CostManager) Scopes(ctx context.Context, req *spider.Request) (throttling.Scopes, error) {
	scopes, err := m.DefaultManager.Scopes(ctx, req)
	if err != nil || req.Host() != "api.toscrape.com" {
		return scopes, err
	}
	return throttling.AddScope(scopes, "cost", estimateCost(req)), nil
}

func (m *CostManager) ResponseBackoff(ctx context.Context, res *spider.Response, scopes throttling.Scopes) (throttling.Feedback, error) {
	fb, err := m.DefaultManager.ResponseBackoff(ctx, res, scopes)
	actual, perr := strconv.ParseFloat(res.Header.Get("X-Actual-Cost"), 64)
	if err != nil || perr != nil {
		return fb, err
	}
	return throttling.UpdateScopeBackoff(fb, "cost", throttling.Consumed(actual-estimateCost(res.Request))), nil
}

func init() {
	throttling.RegisterManager("CostManager", func(d throttling.ManagerDeps) (throttling.Manager, error) {
		return throttling.CacheScopes(&CostManager{DefaultManager: d.Default()}), nil
	})
}

// In gocrawl.yaml (THROTTLING_WINDOW defaults to 60 seconds):
//
//	THROTTLING_MANAGER: CostManager
//	THROTTLING_SCOPES:
//	  cost: {quota: 100.0, concurrency: 0}
//	  api.toscrape.com: {rate_control: false}
//
// The API's budget is the quota, so the host's rate controller is off:
// with it on, its start ramp would also space the host's first requests
// (docs/throttling.md, "The start ramp").
func Example_costCappedQuota() {
	s := settings.New()
	_ = s.SetMap(map[string]any{
		"THROTTLING_MANAGER": "CostManager",
		"THROTTLING_SCOPES": map[string]any{"cost": map[string]any{"quota": 100.0, "concurrency": 0},
			"api.toscrape.com": map[string]any{"rate_control": false}},
	}, settings.SourceFile, "gocrawl.yaml")
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t, err := throttling.New(s, throttling.Options{Clock: fc})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	send := func(u string, actual string) {
		req := spider.MustRequest(u, nil)
		scopes, _ := t.Scopes(ctx, req)
		if w := t.Wait(fc.Now(), scopes); w > 0 {
			fmt.Printf("%s waits %v for the next window\n", u, w)
			fc.Advance(w)
		}
		t.Sent(fc.Now(), scopes)
		res := &spider.Response{URL: req.URL, Status: 200, Request: req, Header: http.Header{"X-Actual-Cost": {actual}}}
		t.Done(ctx, req, scopes, fc.Now(), res, nil)
		fmt.Printf("%s sent at +%v\n", u, fc.Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	}
	for range 9 {
		send("https://api.toscrape.com/?render=1", "10") // 90 spent
	}
	send("https://api.toscrape.com/?render=1&big=1", "25") // estimated 10, cost 25: 115 spent
	send("https://api.toscrape.com/?q=cheap", "1")         // over the quota: next window
	// Output:
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1 sent at +0s
	// https://api.toscrape.com/?render=1&big=1 sent at +0s
	// https://api.toscrape.com/?q=cheap waits 1m0s for the next window
	// https://api.toscrape.com/?q=cheap sent at +1m0s
}
