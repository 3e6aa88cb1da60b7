package main

import (
	"bytes"
	"context"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

// fastHTTPGet is the bare loop's getFunc on fasthttp's client instead of
// net/http's: the same loop with a client that reuses its request and
// response objects and runs no goroutine per connection. It measures how
// much of the bare loop's cost is net/http's, the client gocrawl's
// downloader (and Colly) are built on; gocrawl does not use fasthttp.
func fastHTTPGet(sc scenario.Scenario) getFunc {
	client := &fasthttp.Client{
		MaxConnsPerHost: sc.Concurrency,
		ReadTimeout:     30 * time.Second,
		WriteTimeout:    30 * time.Second,
	}
	return func(ctx context.Context, u *url.URL, buf *bytes.Buffer) (int, error) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(u.String())
		if err := client.Do(req, resp); err != nil {
			return 0, err
		}
		buf.Write(resp.Body())
		return resp.StatusCode(), nil
	}
}
