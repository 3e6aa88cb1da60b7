package middleware

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"golang.org/x/net/publicsuffix"

	"github.com/gocrawl/gocrawl/middleware/session"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterDownloader("Cookies", newCookies) }

// Cookies keeps the cookies servers set and sends them back, like a
// browser: one jar per spider (net/http/cookiejar with the public suffix
// list, so a site cannot set cookies for a whole "co.uk"), plus one jar per
// value of the cookiejar meta for separate sessions (log in as several
// users in one crawl). A request sent as a session of the Sessions
// middleware uses the session's jar. Cookies set by redirect responses are kept before
// the redirect is followed.
//
// The cookies meta (map of name -> value) adds cookies to the jar for the
// request's URL before it is sent; dont_merge_cookies meta sends nothing
// from the jar and keeps nothing from the response. A Cookie header the
// request already has is kept, and jar cookies with other names are added
// to it. The header is added to a copy, so retries and redirects made
// from the request get the jar's cookies for their own URL.
//
// COOKIES_DEBUG logs cookies sent and received at debug level, with their
// values redacted.
type Cookies struct {
	debug bool
	log   zerolog.Logger

	// def is the default jar (no session, no cookiejar meta), kept apart
	// so that most requests find it without taking mu.
	def  *jar
	mu   sync.Mutex
	jars map[string]*jar
}

// jar is a cookie jar that knows when it has never stored a cookie: until
// then Cookies returns nothing without asking the jar, which would
// canonicalize the host and look up its public suffix on every request of
// a crawl whose sites set no cookies.
type jar struct {
	*cookiejar.Jar
	stored atomic.Bool
}

func newJar() *jar {
	j, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	return &jar{Jar: j}
}

// SetCookies stores cookies as cookiejar.Jar.SetCookies does.
func (j *jar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	if len(cookies) == 0 {
		return
	}
	j.stored.Store(true)
	j.Jar.SetCookies(u, cookies)
}

// Cookies returns the cookies to send to u, as cookiejar.Jar.Cookies does.
func (j *jar) Cookies(u *url.URL) []*http.Cookie {
	if !j.stored.Load() {
		return nil
	}
	return j.Jar.Cookies(u)
}

func newCookies(c *spider.Crawler) (Downloader, error) {
	if !c.Settings.Bool("COOKIES_ENABLED") {
		return nil, nil
	}
	return &Cookies{debug: c.Settings.Bool("COOKIES_DEBUG"), log: c.Log, def: newJar(), jars: map[string]*jar{}}, nil
}

// Jar returns the jar of a session: "" for the default one, else the
// cookiejar meta value formatted with %v.
func (m *Cookies) Jar(session string) http.CookieJar {
	if session == "" {
		return m.def
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jars[session]
	if j == nil {
		j = newJar()
		m.jars[session] = j
	}
	return j
}

// jarFor is the jar of req: its session's (Sessions middleware), else the
// one its cookiejar meta names, else the spider's.
func (m *Cookies) jarFor(ctx context.Context, req *spider.Request) http.CookieJar {
	if s := session.FromContext(ctx); s != nil {
		return s.Jar()
	}
	if v := req.Get(MetaCookieJar); v != nil {
		return m.Jar(fmt.Sprint(v))
	}
	return m.Jar("")
}

// WrapFetcher implements Downloader.
func (m *Cookies) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		if metaBool(req, MetaDontMergeCookies) {
			return next.Fetch(ctx, req)
		}
		jar := m.jarFor(ctx, req)
		if cs := metaCookies(req); len(cs) > 0 {
			jar.SetCookies(req.URL, cs)
		}
		send := req
		if cs := jar.Cookies(req.URL); len(cs) > 0 {
			send = shallowWithHeader(req)
			have := map[string]bool{}
			var parts []string
			if h := send.Header.Get("Cookie"); h != "" {
				parts = append(parts, h)
				for _, c := range parseCookieHeader(h) {
					have[c.Name] = true
				}
			}
			for _, c := range cs {
				if !have[c.Name] {
					parts = append(parts, c.Name+"="+c.Value)
				}
			}
			send.Header.Set("Cookie", strings.Join(parts, "; "))
			if m.debug {
				m.log.Debug().Str("request", RedactedRequest(req)).Strs("cookies", redactCookies(cs)).Msg("sending cookies")
			}
		}
		res, err := next.Fetch(ctx, send)
		if err != nil || res == nil {
			return res, err
		}
		if len(res.Header["Set-Cookie"]) == 0 {
			return res, nil
		}
		if set := (&http.Response{Header: res.Header}).Cookies(); len(set) > 0 {
			jar.SetCookies(res.URL, set)
			if m.debug {
				m.log.Debug().Str("url", RedactedURL(res.URL)).Strs("cookies", redactCookies(set)).Msg("received cookies")
			}
		}
		return res, nil
	})
}

// metaCookies reads the cookies meta: a map of name -> value
// (map[string]any after a persistent queue, map[string]string from Go).
func metaCookies(req *spider.Request) []*http.Cookie {
	var cs []*http.Cookie
	switch m := req.Get(MetaCookies).(type) {
	case map[string]any:
		for k, v := range m {
			cs = append(cs, &http.Cookie{Name: k, Value: fmt.Sprint(v), Path: "/"})
		}
	case map[string]string:
		for k, v := range m {
			cs = append(cs, &http.Cookie{Name: k, Value: v, Path: "/"})
		}
	}
	return cs
}

// shallowWithHeader copies req with its own header map, so changes to the
// headers do not show in the request outer middlewares hold.
func shallowWithHeader(req *spider.Request) *spider.Request {
	c := *req
	c.Header = req.Header.Clone()
	if c.Header == nil {
		c.Header = http.Header{}
	}
	return &c
}

func parseCookieHeader(h string) []*http.Cookie {
	r := http.Request{Header: http.Header{"Cookie": {h}}}
	return r.Cookies()
}

// redactCookies lists cookies as "name=<n bytes>": cookie values are often
// credentials (session tokens) and are never logged.
func redactCookies(cs []*http.Cookie) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s=<%d bytes>", c.Name, len(c.Value))
	}
	sort.Strings(out)
	return out
}
