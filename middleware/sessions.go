package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/gocrawl/gocrawl/middleware/session"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterDownloader("Sessions", newSessions) }

// Request meta keys of the Sessions middleware.
const (
	// MetaSession (string) pins a request to the named session: the same
	// cookies, proxy and headers as the other requests pinned to it. A
	// pinned session that was retired fails the request with an error
	// matching session.ErrRetired instead of changing identity.
	MetaSession = "session"
	// MetaSessionUsed (string) is the session a request went out with;
	// set by Sessions.
	MetaSessionUsed = "session_used"
)

// sessionSaveEvery is how often session changes are saved at most.
const sessionSaveEvery = 5 * time.Second

// Sessions (the "Sessions" downloader middleware, order 690, on when
// SESSION_POOL_SIZE > 0) sends each request as one of SESSION_POOL_SIZE
// sessions, in turn, or as the session its session meta pins. A session
// has its own cookie jar (the Cookies middleware uses it instead of the
// spider's), its headers (SESSION_USER_AGENTS, SESSION_HEADERS: they
// replace USER_AGENT and DEFAULT_REQUEST_HEADERS, while headers the
// request sets itself win) and, with ProxyPool, its proxy. Redirects and
// retries of a request keep its session while it lives.
//
// A refusal (a PROXY_BAN_CODES status, the spider's BanChecker, or a
// ProxyPool retry after a refusal) retires the session at once; download
// errors retire it after SESSION_MAX_ERRORS in a row, and
// SESSION_MAX_USES requests retire it too. A refused request that was not
// pinned is retried with another session (unless ProxyPool already
// retried it). With JOBDIR the sessions, cookies included, are kept in
// JOBDIR/sessions.json and restored on resume. Stats: session/created,
// session/retired/<reason>, session/restored.
type Sessions struct {
	pool     *session.Pool
	defaults map[string]string // USER_AGENT and DEFAULT_REQUEST_HEADERS, canonical names
	banCodes map[int]bool
	ban      BanChecker
	retries  int
	stats    *stats.Collector
}

func newSessions(c *spider.Crawler) (Downloader, error) {
	s := c.Settings
	size := s.Int("SESSION_POOL_SIZE")
	if size == 0 {
		return nil, nil
	}
	var store session.Store = session.NewMemoryStore()
	if dir := s.String("JOBDIR"); dir != "" {
		fs, err := session.OpenFileStore(filepath.Join(dir, "sessions.json"))
		if err != nil {
			return nil, err
		}
		store = fs
	}
	headers := map[string]string{}
	for k, v := range s.Map("SESSION_HEADERS") {
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("SESSION_HEADERS: header %q: want a string value, got %v", k, v)
		}
		headers[k] = str
	}
	st := c.Stats
	if st == nil {
		st = stats.New()
	}
	pool, err := session.NewPool(context.Background(), session.Options{
		Size: size, MaxUses: s.Int("SESSION_MAX_USES"), MaxErrors: s.Int("SESSION_MAX_ERRORS"),
		UserAgents: s.Strings("SESSION_USER_AGENTS"), Headers: headers, SaveEvery: sessionSaveEvery, Stats: st,
	}, store)
	if err != nil {
		return nil, err
	}
	defaults := map[string]string{}
	for k, v := range s.Map("DEFAULT_REQUEST_HEADERS") {
		if str, ok := v.(string); ok {
			defaults[http.CanonicalHeaderKey(k)] = str
		}
	}
	if ua := s.String("USER_AGENT"); ua != "" {
		defaults["User-Agent"] = ua
	}
	m := &Sessions{pool: pool, defaults: defaults, banCodes: banCodes(s.Ints("PROXY_BAN_CODES")), retries: s.Int("PROXY_RETRY_TIMES"), stats: st}
	m.ban, _ = c.Spider.(BanChecker)
	return m, nil
}

// Pool returns the middleware's session pool.
func (m *Sessions) Pool() *session.Pool { return m.pool }

// Close saves the sessions.
func (m *Sessions) Close(context.Context) error { return m.pool.Close() }

// WrapFetcher implements Downloader.
func (m *Sessions) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if metaBool(req, MetaOffline) {
			return next.Fetch(ctx, req)
		}
		var s *session.Session
		pinned := false
		if id, ok := req.Get(MetaSession).(string); ok && id != "" {
			var err error
			if s, err = m.pool.Get(id); err != nil {
				return nil, err
			}
			pinned = true
		} else if id, _ := req.Get(MetaSessionUsed).(string); id != "" && m.pool.Lookup(id) != nil {
			// A redirect or retry of a request keeps its session.
			s = m.pool.Lookup(id)
		} else {
			s = m.pool.Pick()
		}
		req.Set(MetaSessionUsed, s.ID())
		send := req
		if h := s.Headers(); len(h) > 0 {
			send = shallowWithHeader(req)
			for k, v := range h {
				// The request's own headers win; those the DefaultHeaders
				// and UserAgent middlewares filled in give way.
				k = http.CanonicalHeaderKey(k)
				cur := send.Header.Get(k)
				if k == "Referer" {
					cur = send.RefererHeader() // the page's referer is the request's own
				}
				if cur == "" || cur == m.defaults[k] {
					send.Header.Set(k, v)
				}
			}
		}
		res, err := next.Fetch(session.NewContext(ctx, s), send)
		if res != nil && res.Request == send {
			res.Request = req
		}
		var resched *RescheduleError
		switch {
		case errors.As(err, &resched):
			if resched.Reason == ReasonProxyBanned {
				m.pool.Retire(s, "banned")
			}
		case err != nil && ctx.Err() == nil && !intentional(err):
			m.pool.Failed(s)
		case err == nil && isBanned(res, m.banCodes, m.ban):
			m.pool.Retire(s, "banned")
			if !pinned {
				if nr := m.retry(req); nr != nil {
					return nil, &RescheduleError{Requests: []*spider.Request{nr}, Reason: "session_banned"}
				}
			}
		case err == nil:
			m.pool.Succeeded(s)
		}
		return res, err
	})
}

// retry returns a copy of req to send with another session, or nil after
// PROXY_RETRY_TIMES retries.
func (m *Sessions) retry(req *spider.Request) *spider.Request {
	n, _ := metaInt(req, MetaProxyRetryTimes)
	if n >= m.retries {
		return nil
	}
	nr := req.Clone()
	clearCopyMeta(nr)
	nr.Set(MetaProxyRetryTimes, n+1)
	delete(nr.Meta, MetaSessionUsed)
	nr.DontFilter = true
	m.stats.Inc("session/retries", 1)
	return nr
}
