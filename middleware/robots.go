package middleware

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
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
// throttled start like any other (start rate, the host's backoff and
// Retry-After, quotas); it does not wait for a concurrency slot of the
// host, because the request that needs the answer already holds one, and
// it takes that request's turn of the host's delay
// (throttling.WithTurnOf): it is sent at once, and the request, sent back
// through the scheduler, follows it one delay later (see "rescheduled"
// below). So a host's first request, robots.txt, leaves as soon as its
// seed is admitted, and the seed holds its global slot only while
// robots.txt downloads (not while the rate controller's start ramp paces
// the host's first requests: robots.txt then waits its ramp step).
// Concurrent first requests to an origin wait for one fetch.
//
// What each outcome means (RFC 9309, section 2.3.1):
//
//   - 2xx: the rules apply. A file that cannot be parsed allows everything
//     (and is logged); it never crashes the crawl.
//   - 4xx other than 429 ("unavailable"), and a redirect that was not
//     followed: everything is allowed.
//   - 5xx, 429, or a network error ("unreachable"): complete disallow
//     while it lasts, but the origin's requests are kept, not dropped:
//     each is rescheduled (a *RescheduleError, reason
//     "robots.txt_unreachable", stats robotstxt/deferred) to wait in the
//     queue until robots.txt is fetched again, ROBOTSTXT_ERROR_RETRY
//     seconds after the first failure, then twice as long after each
//     further one. Only when robots.txt has been unreachable for
//     ROBOTSTXT_UNREACHABLE_TIMEOUT seconds are its requests dropped
//     (engine/dropped/robots.txt, robotstxt/unreachable_drops, one log
//     line per origin); a later successful fetch lets the origin's new
//     requests through again. robots.txt itself is not retried in place
//     (no Retry middleware), so a hanging robots.txt holds the requests
//     that wait for it for one DOWNLOAD_TIMEOUT at most. A host name that
//     does not resolve (no such host) has no robots.txt to wait for: its
//     requests go on and fail on their own.
//   - A request admitted before its origin's robots.txt was known (while
//     it was being fetched), whose robots.txt turns out to set a
//     Crawl-delay, is rescheduled once (a *RescheduleError, stats
//     robotstxt/rescheduled_for_crawl_delay) instead of sent, so the
//     Crawl-delay holds from the very first requests rather than after a
//     burst of them. The same holds when the robots.txt answer (any
//     status) announces a rate in RateLimit headers (a quota policy:
//     RateLimit-Policy, or a RateLimit quota with its window) that the
//     host's rate controller reads (stats
//     robotstxt/rescheduled_for_ratelimit): a server that announces its
//     quota on its first answer is paced from it, and the requests that
//     waited for robots.txt do not go out together into a quota of fewer.
//     A remaining count without a rate does not reschedule them: it says
//     how much is left now, not how fast it comes back. They are also
//     rescheduled (robotstxt/rescheduled_for_start_ramp) when the host's
//     scope is pacing its first requests as the answer comes (the rate
//     controller's start ramp, throttling.Throttler.StartRamps), so that
//     they go out at its pace rather than together. And so are they
//     (robotstxt/rescheduled_for_delay) when the host's scope has a delay
//     (DOWNLOAD_DELAY, a scope's delay): the robots.txt fetch took their
//     turn (the first one's, and the next requests wait for the delay
//     after it), and the server would otherwise see a request right after
//     robots.txt.
//   - Parsed files are kept for 24 hours (RFC 9309 asks not to use a cached
//     copy longer) in an LRU cache of ROBOTSTXT_CACHE_SIZE origins.
type RobotsTxt struct {
	c         *spider.Crawler
	agent     string
	errorTTL  time.Duration // first retry after a failure; doubles
	giveUp    time.Duration // ROBOTSTXT_UNREACHABLE_TIMEOUT
	size      int
	delays    RobotsDelaySetter
	rl        RateLimitReader
	ramp      StartRamper
	views     ScopeViewer
	share     throttling.SharedRobots // the job's answers, in a distributed crawl
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
	paced   bool      // the answer carried RateLimit headers the host's scope reads
	ramped  bool      // the host's scope paces its first requests (the rate controller's start ramp)
	spaced  bool      // the host's scope has a delay: the fetch took the turn of the requests that waited for it
	readyAt time.Time // when the Crawl-delay or the RateLimit headers were applied (crawl clock)
	expires time.Time
	// While robots.txt is unreachable: when it first failed, how many
	// fetches failed in a row, and whether the origin's requests are
	// dropped now (ROBOTSTXT_UNREACHABLE_TIMEOUT passed).
	failedSince time.Time
	failures    int
	gaveUp      bool
	// err is set when the fetch was cut short by a stopping crawl: the
	// entry is forgotten and its waiters give up with err.
	err error
}

// robotsAdmittedBefore reports whether the request being fetched under ctx was
// admitted by the throttler before t, or at t itself: a request admitted at
// the very instant a Crawl-delay was applied may have been admitted under the
// old delay, so it is rescheduled (politeness first: at worst it waits once
// more).
func robotsAdmittedBefore(ctx context.Context, t time.Time) bool {
	at, ok := throttling.SentAtFrom(ctx)
	return ok && !at.After(t)
}

// RateLimitReader is what RobotsTxt asks the throttler about RateLimit
// headers on a robots.txt answer; *throttling.Throttler implements it.
type RateLimitReader interface {
	ReadsRateLimit(scope string) bool
}

// StartRamper is what RobotsTxt asks the throttler about a host's first
// requests: whether the scope paces them (the rate controller's start
// ramp), so that the requests that waited for robots.txt go out through
// the gate again rather than together; *throttling.Throttler implements
// it.
type StartRamper interface {
	StartRamps(scope string) bool
}

// ScopeViewer is what RobotsTxt asks the throttler about a host's delay:
// whether robots.txt, fetched while requests of the host waited, took
// their turn of the delay; *throttling.Throttler implements it.
type ScopeViewer interface {
	View(scope string) throttling.ScopeView
}

// NewRobotsTxt builds the middleware for a crawl. The crawler's Throttler receives
// Crawl-delays when it implements RobotsDelaySetter.
func NewRobotsTxt(c *spider.Crawler) (*RobotsTxt, error) {
	if c.Download == nil {
		return nil, fmt.Errorf("RobotsTxt: the crawler has no Download function to fetch robots.txt with")
	}
	m := &RobotsTxt{c: c, agent: RobotsAgent(c.Settings.String("ROBOTSTXT_USER_AGENT"), c.Settings.String("USER_AGENT")),
		errorTTL: c.Settings.Seconds("ROBOTSTXT_ERROR_RETRY"), giveUp: c.Settings.Seconds("ROBOTSTXT_UNREACHABLE_TIMEOUT"),
		size: c.Settings.Int("ROBOTSTXT_CACHE_SIZE"),
		now:  time.Now, fetchFunc: c.Download, entries: map[string]*list.Element{}, order: list.New()}
	if d, ok := c.Throttler.(RobotsDelaySetter); ok {
		m.delays = d
	}
	if r, ok := c.Throttler.(RateLimitReader); ok {
		m.rl = r
	}
	if r, ok := c.Throttler.(StartRamper); ok {
		m.ramp = r
	}
	if v, ok := c.Throttler.(ScopeViewer); ok {
		m.views = v
	}
	if s, ok := c.Throttler.(interface {
		SharedRobots() throttling.SharedRobots
	}); ok {
		m.share = s.SharedRobots()
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
	if e.err != nil {
		return e.err
	}
	if e.unreach {
		if e.gaveUp {
			m.stat("robotstxt/unreachable_drops")
			return &DropError{Reason: DropReasonRobotsTxt, Err: ErrRobotsTxtUnreachable}
		}
		// Complete disallow for now: the request waits in the queue
		// until robots.txt is fetched again.
		m.stat("robotstxt/deferred")
		again := req.Clone()
		again.DontFilter = true
		throttling.SetRequestDelay(again, max(e.expires.Sub(m.now()), time.Second))
		return &RescheduleError{Requests: []*spider.Request{again}, Reason: "robots.txt_unreachable", Err: ErrRobotsTxtUnreachable}
	}
	if !m.allowed(e.data, req) {
		m.stat("robotstxt/forbidden")
		return &DropError{Reason: DropReasonRobotsTxt, Err: ErrRobotsTxtDisallowed}
	}
	if e.delayed && (waited || robotsAdmittedBefore(ctx, e.readyAt)) || (e.paced || e.ramped || e.spaced) && waited {
		// Admitted before the origin's Crawl-delay (or quota) was known:
		// send it again through the scheduler so the delay holds from the
		// first request. For RateLimit headers only the requests that
		// waited for the fetch: with no delay to wait, one sent again is
		// admitted at the very instant the headers were applied.
		reason := "robots.txt_crawl_delay"
		switch {
		case e.delayed:
		case e.paced:
			reason = "robots.txt_ratelimit"
		case e.spaced && !e.ramped:
			reason = "robots.txt_delay"
		default:
			reason = "robots.txt_start_ramp"
		}
		m.stat("robotstxt/rescheduled_for_" + strings.TrimPrefix(reason, "robots.txt_"))
		again := req.Clone()
		again.DontFilter = true
		return &RescheduleError{Requests: []*spider.Request{again}, Reason: reason}
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
	var prev *robotsEntry
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
			prev = e
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
	if prev != nil && prev.unreach {
		// Still failing since then: the backoff and the give-up time go on.
		e.failedSince, e.failures = prev.failedSince, prev.failures
	}
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
	// Retried by this middleware with its own backoff, not in place: the
	// requests waiting for it are rescheduled meanwhile. robots.txt is
	// never rendered, whatever RENDER_JS says (the meta key of package
	// render).
	req := &spider.Request{URL: &u, Meta: spider.Meta{MetaDontObeyRobotsTxt: true, MetaDontRetry: true, "render": false}, DontFilter: true}
	if m.share != nil && m.fromShare(ctx, e, from) {
		return // another worker of the job fetched it
	}
	m.stat("robotstxt/request_count")
	fctx := throttling.WithoutSlot(ctx)
	if at, ok := throttling.SentAtFrom(ctx); ok && (m.ramp == nil || !m.ramp.StartRamps(from.Host())) {
		// The request it is fetched for has not reached the server: the
		// fetch goes in its turn, and the request follows one delay later
		// (rescheduled by Check when the host has a delay). Not while the
		// rate controller's start ramp paces the host's first requests
		// (delays under 50 ms): its measure of the server's first burst
		// counts from the ramp's own steps, and a step costs nothing.
		fctx = throttling.WithTurnOf(fctx, at)
	}
	res, err := m.fetchFunc(fctx, req)
	if m.share != nil {
		m.toShare(ctx, e.origin, res, err)
	}
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
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			// The host does not exist: no robots.txt to wait for; its
			// requests fail on their own.
			m.stat("robotstxt/no_such_host")
			e.data, e.expires = robotsAllowAll, now.Add(m.errorTTL)
			return
		}
		if errors.Is(err, spider.ErrStopping) {
			// The crawl is stopping: nothing was learnt; forget the entry so
			// a resumed crawl fetches it again.
			e.err = err
			m.forget(e)
			return
		}
		m.unreachable(e, now, log.Warn().Err(err))
		return
	}
	m.stat(fmt.Sprintf("robotstxt/response_status_count/%d", res.Status))
	if m.ramp != nil && m.ramp.StartRamps(from.Host()) {
		e.ramped = true
	}
	if m.views != nil && m.views.View(from.Host()).Delay > 0 {
		e.spaced = true
	}
	if m.rl != nil && m.rl.ReadsRateLimit(from.Host()) {
		// Only an announced rate (a quota policy) paces from one answer;
		// a remaining count alone says how much is left now, not how fast
		// it comes back.
		if rl, ok := throttling.ParseRateLimit(res.Header); ok && rl.Rate() > 0 {
			e.paced, e.readyAt = true, m.now()
		}
	}
	switch {
	case res.Status >= 500 || res.Status == 429:
		m.unreachable(e, now, log.Warn().Int("status", res.Status))
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

// unreachable records a failed fetch of e's robots.txt at now: the next
// fetch is due after the backoff (ROBOTSTXT_ERROR_RETRY, doubling, never
// past the give-up time), and once ROBOTSTXT_UNREACHABLE_TIMEOUT has passed
// since the first failure the origin's requests are dropped.
func (m *RobotsTxt) unreachable(e *robotsEntry, now time.Time, ev *zerolog.Event) {
	m.stat("robotstxt/unreachable")
	e.unreach = true
	if e.failures == 0 {
		e.failedSince = now
	}
	e.failures++
	deadline := e.failedSince.Add(m.giveUp)
	if !now.Before(deadline) {
		e.gaveUp = true
		e.expires = now.Add(robotsBackoff(m.errorTTL, e.failures, RobotsTxtCacheTTL))
		m.stat("robotstxt/unreachable_gave_up")
		ev.Stringer("unreachable_for", now.Sub(e.failedSince)).Int("attempts", e.failures).Stringer("retry_in", e.expires.Sub(now)).
			Msg("robots.txt still unreachable after ROBOTSTXT_UNREACHABLE_TIMEOUT; dropping the origin's requests (RFC 9309: complete disallow)")
		return
	}
	wait := min(robotsBackoff(m.errorTTL, e.failures, RobotsTxtCacheTTL), deadline.Sub(now))
	e.expires = now.Add(wait)
	ev.Int("attempt", e.failures).Stringer("retry_in", wait).Stringer("drop_after", deadline.Sub(now)).
		Msg("robots.txt unreachable; the origin's requests wait until it can be fetched (RFC 9309: complete disallow meanwhile)")
}

// robotsBackoff is base (at least a second) doubled for each failure after
// the first, at most limit.
func robotsBackoff(base time.Duration, failures int, limit time.Duration) time.Duration {
	d := max(base, time.Second)
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// forget removes e from the cache.
func (m *RobotsTxt) forget(e *robotsEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[e.origin]; ok && el.Value == e {
		m.order.Remove(el)
		delete(m.entries, e.origin)
	}
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

// RobotsTxtParseLimit is how much of a robots.txt is parsed: RFC 9309's
// minimum of 500 KiB, cut back to the last complete line. Rules after it
// are ignored, so a huge robots.txt costs bounded parsing time and memory
// (its download is bounded by DOWNLOAD_MAXSIZE).
const RobotsTxtParseLimit = 500 << 10

func parseRobots(body []byte) (data *robotstxt.RobotsData, err error) {
	if len(body) > RobotsTxtParseLimit {
		body = body[:RobotsTxtParseLimit]
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
			body = body[:i+1]
		}
	}
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
