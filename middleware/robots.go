package middleware

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/temoto/robotstxt"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// MetaDontObeyRobotsTxt skips the robots.txt check for one request.
const MetaDontObeyRobotsTxt = "dont_obey_robotstxt"

// DropReasonRobotsTxt is the reason of the *DropError of disallowed
// requests (stats key engine/dropped/robots.txt).
const DropReasonRobotsTxt = "robots.txt"

// RobotsTxtCacheTTL is how long a fetched robots.txt is used before it is
// fetched again.
const RobotsTxtCacheTTL = 24 * time.Hour

func init() {
	RegisterDownloader("RobotsTxt", func(c *spider.Crawler) (Downloader, error) {
		if !c.Settings.Bool("ROBOTSTXT_OBEY") {
			return nil, nil
		}
		return NewRobotsTxt(c)
	})
}

// ErrRobotsTxtUnreachable is the kind of the drop detail while an origin's
// robots.txt is unreachable (5xx, 429, network error).
var ErrRobotsTxtUnreachable = errors.New("robots.txt unreachable: complete disallow (RFC 9309)")

// ErrRobotsTxtDisallowed is the kind of the drop detail of a disallowed
// request.
var ErrRobotsTxtDisallowed = errors.New("disallowed by robots.txt")

// RobotsDelaySetter is what RobotsTxt needs from the throttler to apply a
// Crawl-delay; *throttling.Throttler implements it.
type RobotsDelaySetter interface {
	SetRobotsDelay(scope string, crawlDelay time.Duration) bool
}

// RobotsTxt obeys robots.txt: the downloader middleware registered as
// "RobotsTxt" (order 100 in DOWNLOADER_MIDDLEWARES_BASE) that, with
// ROBOTSTXT_OBEY, fetches each origin's robots.txt once, caches it, drops
// the requests it disallows, and hands its Crawl-delay to the throttler
// (THROTTLING_ROBOTSTXT_OBEY). Create it with NewRobotsTxt.
//
// robots.txt is fetched through spider.Crawler.Download, so the fetch is a
// throttled start like any other (start rate, the host's delay and
// backoff); it does not wait for a concurrency slot of the host, because
// the request that needs the answer already holds one. Concurrent first
// requests to an origin wait for one fetch.
//
// What each outcome means (RFC 9309, section 2.3.1):
//
//   - 2xx: the rules apply. A file that cannot be parsed allows everything
//     (and is logged); it never crashes the crawl.
//   - 4xx other than 429 ("unavailable"), and a redirect that was not
//     followed: everything is allowed.
//   - 5xx, 429, or a network error ("unreachable"): complete disallow, for
//     ROBOTSTXT_ERROR_RETRY seconds; the first request after that fetches
//     robots.txt again. Requests dropped meanwhile are counted under
//     engine/dropped/robots.txt and robotstxt/unreachable.
//   - A request admitted before its origin's robots.txt was known (while
//     it was being fetched), whose robots.txt turns out to set a
//     Crawl-delay, is rescheduled once (a *RescheduleError, stats
//     robotstxt/rescheduled_for_crawl_delay) instead of sent, so the
//     Crawl-delay holds from the very first requests rather than after a
//     burst of them.
//   - Parsed files are kept for 24 hours (RFC 9309 asks not to use a cached
//     copy longer) in an LRU cache of ROBOTSTXT_CACHE_SIZE origins.
type RobotsTxt struct {
	c         *spider.Crawler
	agent     string
	errorTTL  time.Duration
	size      int
	delays    RobotsDelaySetter
	now       func() time.Time
	fetchFunc func(ctx context.Context, req *spider.Request) (*spider.Response, error)

	mu      sync.Mutex
	entries map[string]*list.Element // origin -> *robotsEntry
	order   *list.List               // front = most recently used
}

type robotsEntry struct {
	origin  string
	ready   chan struct{} // closed when data/unreachable are set
	data    *robotstxt.RobotsData
	unreach bool
	delayed bool      // a Crawl-delay was applied to the host's scope
	readyAt time.Time // when the Crawl-delay was applied (crawl clock)
	expires time.Time
}

// robotsAdmittedBefore reports whether the request being fetched under ctx was
// admitted by the throttler before t.
func robotsAdmittedBefore(ctx context.Context, t time.Time) bool {
	at, ok := throttling.SentAtFrom(ctx)
	return ok && at.Before(t)
}

// NewRobotsTxt builds the middleware for a crawl. The crawler's Throttler receives
// Crawl-delays when it implements RobotsDelaySetter.
func NewRobotsTxt(c *spider.Crawler) (*RobotsTxt, error) {
	if c.Download == nil {
		return nil, fmt.Errorf("RobotsTxt: the crawler has no Download function to fetch robots.txt with")
	}
	m := &RobotsTxt{c: c, agent: RobotsAgent(c.Settings.String("ROBOTSTXT_USER_AGENT"), c.Settings.String("USER_AGENT")),
		errorTTL: c.Settings.Seconds("ROBOTSTXT_ERROR_RETRY"), size: c.Settings.Int("ROBOTSTXT_CACHE_SIZE"),
		now: time.Now, fetchFunc: c.Download, entries: map[string]*list.Element{}, order: list.New()}
	if d, ok := c.Throttler.(RobotsDelaySetter); ok {
		m.delays = d
	}
	if c, ok := c.Throttler.(interface{ Now() time.Time }); ok {
		m.now = c.Now // the crawl's clock, the time base of admissions
	}
	return m, nil
}

// Agent returns the user-agent token matched against robots.txt groups:
// robotsAgent when set, else the product token of userAgent
// ("gocrawl/1.0 (+https://...)" -> "gocrawl").
func RobotsAgent(robotsAgent, userAgent string) string {
	if a := strings.TrimSpace(robotsAgent); a != "" {
		return a
	}
	ua := strings.TrimSpace(userAgent)
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		ua = ua[:i]
	}
	if ua == "" {
		return "*"
	}
	return ua
}

// WrapFetcher implements Downloader.
func (m *RobotsTxt) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if err := m.Check(ctx, req); err != nil {
			return nil, err
		}
		return next.Fetch(ctx, req)
	})
}

// Check returns a *DropError when robots.txt forbids req, nil
// when req may be fetched; it fetches the origin's robots.txt when needed.
func (m *RobotsTxt) Check(ctx context.Context, req *spider.Request) error {
	if req.URL.Path == "/robots.txt" {
		return nil
	}
	if skip, _ := req.Get(MetaDontObeyRobotsTxt).(bool); skip {
		return nil
	}
	e, waited, err := m.robotsEntry(ctx, req)
	if err != nil {
		return err
	}
	if e.unreach {
		m.stat("robotstxt/unreachable_drops")
		return &DropError{Reason: DropReasonRobotsTxt, Err: ErrRobotsTxtUnreachable}
	}
	if !m.allowed(e.data, req) {
		m.stat("robotstxt/forbidden")
		return &DropError{Reason: DropReasonRobotsTxt, Err: ErrRobotsTxtDisallowed}
	}
	if e.delayed && (waited || robotsAdmittedBefore(ctx, e.readyAt)) {
		// Admitted before the origin's Crawl-delay was known: send it again
		// through the scheduler so the delay holds from the first request.
		m.stat("robotstxt/rescheduled_for_crawl_delay")
		again := req.Clone()
		again.DontFilter = true
		return &RescheduleError{Requests: []*spider.Request{again}, Reason: "robots.txt_crawl_delay"}
	}
	return nil
}

func (m *RobotsTxt) allowed(d *robotstxt.RobotsData, req *spider.Request) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = true // a parser bug must not stop the crawl
		}
	}()
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	if req.URL.RawQuery != "" {
		path += "?" + req.URL.RawQuery
	}
	return d.TestAgent(path, m.agent)
}

func robotsOrigin(req *spider.Request) string {
	return req.URL.Scheme + "://" + req.Host()
}

// robotsEntry returns the origin's robots.txt, fetching it once for all
// concurrent callers; waited reports whether the caller had to wait for
// the fetch (it was admitted before the robots.txt was known).
func (m *RobotsTxt) robotsEntry(ctx context.Context, req *spider.Request) (e *robotsEntry, waited bool, err error) {
	key := robotsOrigin(req)
	now := m.now()
	m.mu.Lock()
	if el, ok := m.entries[key]; ok {
		e := el.Value.(*robotsEntry)
		select {
		case <-e.ready:
			if now.Before(e.expires) {
				m.order.MoveToFront(el)
				m.mu.Unlock()
				return e, false, nil
			}
			m.order.Remove(el) // expired: fetch again below
			delete(m.entries, key)
		default:
			m.mu.Unlock()
			select { // someone is fetching it
			case <-e.ready:
				return e, true, nil
			case <-ctx.Done():
				return nil, true, ctx.Err()
			}
		}
	}
	e = &robotsEntry{origin: key, ready: make(chan struct{})}
	m.entries[key] = m.order.PushFront(e)
	if m.size > 0 {
		for m.order.Len() > m.size {
			old := m.order.Back()
			m.order.Remove(old)
			delete(m.entries, old.Value.(*robotsEntry).origin)
		}
	}
	m.mu.Unlock()

	// The fetch outlives a cancelled first caller: others may wait on it.
	go m.fetch(context.WithoutCancel(ctx), e, req)
	select {
	case <-e.ready:
		return e, true, nil
	case <-ctx.Done():
		return nil, true, ctx.Err()
	}
}

func (m *RobotsTxt) fetch(ctx context.Context, e *robotsEntry, from *spider.Request) {
	defer close(e.ready)
	u := *from.URL
	u.Path, u.RawPath, u.RawQuery, u.Fragment, u.User = "/robots.txt", "", "", "", nil
	// robots.txt is never rendered, whatever RENDER_JS says (the meta key
	// of package render).
	req := &spider.Request{URL: &u, Meta: spider.Meta{MetaDontObeyRobotsTxt: true, "render": false}, DontFilter: true}
	m.stat("robotstxt/request_count")
	res, err := m.fetchFunc(throttling.WithoutSlot(ctx), req)
	now := m.now()
	log := m.c.Log.With().Str("url", u.String()).Logger()
	switch {
	case err != nil:
		var drop *DropError
		if errors.As(err, &drop) {
			// Another middleware chose not to fetch it: nothing to obey.
			e.data, e.expires = robotsAllowAll, now.Add(RobotsTxtCacheTTL)
			return
		}
		m.stat("robotstxt/unreachable")
		log.Warn().Err(err).Stringer("retry_in", m.errorTTL).Msg("robots.txt unreachable; disallowing the origin until it can be fetched (RFC 9309)")
		e.unreach, e.expires = true, now.Add(m.errorTTL)
		return
	}
	m.stat(fmt.Sprintf("robotstxt/response_status_count/%d", res.Status))
	switch {
	case res.Status >= 500 || res.Status == 429:
		m.stat("robotstxt/unreachable")
		log.Warn().Int("status", res.Status).Stringer("retry_in", m.errorTTL).Msg("robots.txt unreachable; disallowing the origin until it can be fetched (RFC 9309)")
		e.unreach, e.expires = true, now.Add(m.errorTTL)
		return
	case res.Status < 200 || res.Status >= 300:
		e.data, e.expires = robotsAllowAll, now.Add(RobotsTxtCacheTTL)
		return
	}
	data, perr := parseRobots(res.Body)
	if perr != nil {
		m.stat("robotstxt/malformed")
		log.Warn().Err(perr).Msg("robots.txt could not be parsed; allowing everything on this origin")
		data = robotsAllowAll
	}
	e.data, e.expires = data, now.Add(RobotsTxtCacheTTL)
	e.delayed = m.applyDelay(data, from)
	e.readyAt = m.now()
}

func (m *RobotsTxt) applyDelay(data *robotstxt.RobotsData, req *spider.Request) bool {
	if m.delays == nil {
		return false
	}
	g := data.FindGroup(m.agent)
	if g == nil || g.CrawlDelay <= 0 {
		return false
	}
	return m.delays.SetRobotsDelay(req.Host(), g.CrawlDelay)
}

var robotsAllowAll, _ = robotstxt.FromStatusAndBytes(404, nil)

func parseRobots(body []byte) (data *robotstxt.RobotsData, err error) {
	defer func() {
		if v := recover(); v != nil {
			data, err = nil, fmt.Errorf("robots.txt parser panicked: %v", v)
		}
	}()
	return robotstxt.FromBytes(body)
}

func (m *RobotsTxt) stat(key string) {
	if m.c.Stats != nil {
		m.c.Stats.Inc(key, 1)
	}
}

// Len returns the number of origins cached.
func (m *RobotsTxt) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}
