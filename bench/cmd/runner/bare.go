package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

// hrefRE is the bare loop's whole "parser": every double-quoted href.
var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

// getFunc downloads u's body into buf and returns the status code: the
// one part of the bare loop that depends on the HTTP client.
type getFunc func(ctx context.Context, u *url.URL, buf *bytes.Buffer) (status int, err error)

// netHTTPGet returns the net/http client's getFunc (the one gocrawl's
// downloader is built on) and a function closing its idle connections.
func netHTTPGet(sc scenario.Scenario) (getFunc, func()) {
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        sc.Concurrency,
			MaxIdleConnsPerHost: sc.Concurrency,
			IdleConnTimeout:     90 * time.Second,
			// As gocrawl's downloader: one read per small page instead
			// of two, so that gocrawl/bare compares the framework, not
			// a transport setting.
			ReadBufferSize: 32 << 10,
		},
	}
	get := func(ctx context.Context, u *url.URL, buf *bytes.Buffer) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = buf.ReadFrom(resp.Body)
		return resp.StatusCode, err
	}
	return get, client.CloseIdleConnections
}

// runBare crawls with the cheapest loop that still does the job: an HTTP
// client (get), the scenario's concurrency in goroutines, a regexp scan
// for links, a set of seen URLs, and nothing else: no HTML parsing, no
// politeness, no retries, no persistence. With net/http it is the ceiling
// the framework is measured against (gocrawl/bare in the table), on the
// same machine in the same run.
func runBare(ctx context.Context, sc scenario.Scenario, starts []string, counter *progress, get getFunc) (Result, error) {
	var res Result
	hosts := map[string]bool{}
	for _, s := range starts {
		u, err := url.Parse(s)
		if err != nil {
			return res, err
		}
		hosts[u.Host] = true
	}

	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		queue    []*url.URL
		seen     = map[string]struct{}{}
		inFlight int
	)
	push := func(u *url.URL) { // mu held
		key := u.String()
		if _, ok := seen[key]; ok {
			return
		}
		seen[key] = struct{}{}
		queue = append(queue, u)
		cond.Signal()
	}
	for _, s := range starts {
		u, _ := url.Parse(s)
		push(u)
	}
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}

	fetch := func(u *url.URL) (links []*url.URL, status int, err error) {
		buf := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(buf)
		buf.Reset()
		status, err = get(ctx, u, buf)
		if err != nil {
			return nil, status, err
		}
		counter.addBytes(buf.Len())
		for _, m := range hrefRE.FindAllSubmatch(buf.Bytes(), -1) {
			ref, err := url.Parse(string(m[1]))
			if err != nil {
				continue
			}
			abs := u.ResolveReference(ref)
			abs.Fragment = ""
			if (abs.Scheme == "http" || abs.Scheme == "https") && hosts[abs.Host] {
				links = append(links, abs)
			}
		}
		return links, status, nil
	}

	var wg sync.WaitGroup
	for range sc.Concurrency {
		wg.Go(func() {
			for {
				mu.Lock()
				for len(queue) == 0 && inFlight > 0 {
					cond.Wait()
				}
				if len(queue) == 0 { // nothing queued, nothing in flight: done
					mu.Unlock()
					cond.Broadcast()
					return
				}
				u := queue[0]
				queue[0] = nil
				queue = queue[1:]
				inFlight++
				mu.Unlock()

				links, status, err := fetch(u)

				mu.Lock()
				inFlight--
				switch {
				case err != nil && status == 0:
					res.Errors++
				case err != nil || status < 200 || status > 299:
					res.Responses++
					res.Errors++
				default:
					res.Responses++
					res.OK++
				}
				for _, l := range links {
					push(l)
				}
				if inFlight == 0 && len(queue) == 0 {
					cond.Broadcast()
				}
				mu.Unlock()
				counter.add(1)
			}
		})
	}
	wg.Wait()
	if res.Responses == 0 {
		return res, fmt.Errorf("bare: no response from %v", starts)
	}
	return res, nil
}
