package middleware

import (
	"context"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// robots.txt once per job.
//
// In a distributed crawl every worker would otherwise fetch each origin's
// robots.txt for itself: one request per worker and host, each taking a
// turn of the host's delay. With a crawler whose throttler keeps its state
// in a shared store that also keeps robots.txt answers
// (throttling.SharedRobots), the first worker that needs an origin's
// robots.txt claims its fetch, fetches it (in its request's turn, as in
// one process) and stores the answer; the others read it from the store,
// or wait for it while it is being fetched. An answer that says nothing
// lasting (5xx, 429, a network error) is not stored: the claim is given up
// and each worker backs off on its own, as alone.

// robotsSharePoll is how often a worker asks again for an answer another
// worker is fetching.
const robotsSharePoll = 50 * time.Millisecond

// fromShare fills e with the job's stored answer for its origin and
// reports true; it reports false when this worker is to fetch it (it
// claimed the fetch, or the store cannot be asked). While another worker
// fetches it, it waits.
func (m *RobotsTxt) fromShare(ctx context.Context, e *robotsEntry, from *spider.Request) bool {
	for waited := false; ; waited = true {
		status, body, found, claimed, err := m.share.RobotsTxt(ctx, e.origin)
		switch {
		case err != nil:
			m.c.Log.Warn().Err(err).Str("origin", e.origin).Msg("robots.txt: the job's stored answers cannot be read; fetching it here")
			return false
		case found:
			m.stat("robotstxt/shared")
			m.learnShared(e, from, status, body)
			if waited && m.views != nil && m.views.View(from.Host()).Delay > 0 {
				// The requests that waited for it were admitted before
				// it came: another worker's next request of the host may
				// have gone meanwhile. They go back through the gate.
				e.spaced = true
			}
			return true
		case claimed:
			return false
		}
		t := time.NewTimer(robotsSharePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// learnShared fills e from an answer another worker fetched, read at
// once: the request that asked was admitted after that robots.txt (no
// fetch of this worker took its turn) and goes on; a Crawl-delay still
// sends back those admitted before it was applied here. (Requests that
// had to wait for the other worker's fetch are sent back: fromShare.)
func (m *RobotsTxt) learnShared(e *robotsEntry, from *spider.Request, status int, body []byte) {
	now := m.now()
	e.expires = now.Add(RobotsTxtCacheTTL)
	if status < 200 || status >= 300 {
		e.data = robotsAllowAll
		return
	}
	data, err := parseRobots(body)
	if err != nil {
		data = robotsAllowAll
	}
	e.data = data
	e.delayed = m.applyDelay(data, from)
	e.readyAt = m.now()
}

// toShare stores a fetched answer for the job's other workers (a 2xx or
// 4xx: what RFC 9309 lets a crawler keep), or gives the claim up.
func (m *RobotsTxt) toShare(ctx context.Context, origin string, res *spider.Response, err error) {
	ctx = context.WithoutCancel(ctx)
	if err != nil || res == nil || res.Status >= 500 || res.Status == 429 {
		m.share.ReleaseRobotsTxt(ctx, origin)
		return
	}
	if serr := m.share.StoreRobotsTxt(ctx, origin, res.Status, res.Body, RobotsTxtCacheTTL); serr != nil {
		m.c.Log.Warn().Err(serr).Str("origin", origin).Msg("robots.txt: the answer could not be stored for the job's other workers")
	}
}
