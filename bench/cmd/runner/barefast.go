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
//
// Like for like on the bench's sites, not in general: fasthttp follows no
// redirect and asks for no compression (the bench's sites use neither, and
// the bench checks that every page and byte arrived), has no HTTP/2, and
// is not cancelled through a context (here only its deadline, 30 s as the
// net/http loop's timeout). MaxConnsPerHost is a hard cap in fasthttp (a
// request beyond it fails); with the loop's Concurrency goroutines it is
// never reached.
func fastHTTPGet(sc scenario.Scenario) getFunc {
	client := newFastClient(sc.Concurrency)
	return func(ctx context.Context, u *url.URL, buf *bytes.Buffer) (int, error) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(u.String())
		if err := client.DoDeadline(req, resp, fastDeadline(ctx)); err != nil {
			return 0, err
		}
		buf.Write(resp.Body())
		return resp.StatusCode(), nil
	}
}

// newFastClient is the fasthttp client of both fasthttp variants: at most
// maxConns connections per host, 30 s timeouts as the net/http loop's.
func newFastClient(maxConns int) *fasthttp.Client {
	return &fasthttp.Client{
		MaxConnsPerHost: maxConns,
		ReadTimeout:     30 * time.Second,
		WriteTimeout:    30 * time.Second,
	}
}

// fastDeadline is ctx's deadline, or 30 s from now without one: fasthttp
// is not cancelled through a context.
func fastDeadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(30 * time.Second)
}
