package main

import (
	"context"
	"net/url"
	"sync/atomic"

	"github.com/gocolly/colly/v2"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

// runColly crawls with Colly configured as its documentation recommends for
// parallel scraping: an asynchronous collector and one LimitRule for every
// domain with the scenario's parallelism and the variant's delay. Colly's
// other defaults are kept (robots.txt ignored, no retries, its own HTTP
// client).
func runColly(_ context.Context, sc scenario.Scenario, v scenario.Variant, starts []string, counter *progress) (Result, error) {
	var res Result
	var responses, ok, errs atomic.Int64
	c := colly.NewCollector(colly.Async(true))
	if sc.Broad != nil {
		// A broad crawl: one LimitRule per host (its delay, one request
		// at a time), robots.txt obeyed, as a polite Colly crawl is set up.
		c.IgnoreRobotsTxt = false
		for _, s := range starts {
			u, err := url.Parse(s)
			if err != nil {
				return res, err
			}
			if err := c.Limit(&colly.LimitRule{DomainGlob: u.Host, Parallelism: 1, Delay: v.CollyDelay}); err != nil {
				return res, err
			}
		}
	} else if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: sc.Concurrency, Delay: v.CollyDelay}); err != nil {
		return res, err
	}
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		_ = e.Request.Visit(e.Attr("href")) // already visited: an error, ignored
	})
	c.OnResponse(func(r *colly.Response) {
		responses.Add(1)
		ok.Add(1)
		counter.addBytes(len(r.Body))
		counter.add(1)
	})
	c.OnError(func(r *colly.Response, err error) {
		if r != nil && r.StatusCode != 0 {
			responses.Add(1)
		}
		errs.Add(1)
	})
	for _, u := range starts {
		if err := c.Visit(u); err != nil {
			return res, err
		}
	}
	c.Wait()
	res.Responses, res.OK, res.Errors = responses.Load(), ok.Load(), errs.Load()
	return res, nil
}
