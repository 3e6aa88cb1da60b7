// Package session keeps a pool of sessions: identities a crawl rotates
// over when a site starts refusing one of them. A session is a cookie jar,
// a proxy (the ProxyPool middleware keeps a session on one proxy while it
// works) and headers (a User-Agent from SESSION_USER_AGENTS, the
// SESSION_HEADERS). The Sessions downloader middleware (package
// middleware) hands each request a session, or the one the request pins
// with the session meta; a session is retired when the site refuses it (a
// PROXY_BAN_CODES status or the spider's ban check), after
// SESSION_MAX_ERRORS failures in a row, or after SESSION_MAX_USES
// requests, and a new one takes its place.
//
// The pool's state is kept in a Store: in memory, or in the job directory
// with JOBDIR (sessions.json, written atomically), so a paused crawl
// resumes with its sessions, cookies included. The Store interface is
// what a shared (distributed) store implements.
package session

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Cookie is one cookie of a session as stored: enough to set it again into
// a jar (for the URL it was received from).
type Cookie struct {
	URL      string    `json:"url"`
	Name     string    `json:"name"`
	Value    string    `json:"value"`
	Domain   string    `json:"domain,omitempty"`
	Path     string    `json:"path,omitempty"`
	Expires  time.Time `json:"expires,omitzero"`
	Secure   bool      `json:"secure,omitempty"`
	HTTPOnly bool      `json:"http_only,omitempty"`
}

// Record is a session's stored state.
type Record struct {
	// ID names the session ("s1", or the name a request pinned).
	ID string `json:"id"`
	// Proxy is the label (HOST:PORT) of the session's proxy, "" for none.
	Proxy string `json:"proxy,omitempty"`
	// Headers are sent with every request of the session.
	Headers map[string]string `json:"headers,omitempty"`
	// Cookies are the cookies the session received.
	Cookies []Cookie `json:"cookies,omitempty"`
	// Uses counts requests; Errors counts failures in a row.
	Uses   int `json:"uses"`
	Errors int `json:"errors"`
	// Pinned sessions were named by a request's session meta: they are
	// not handed to other requests.
	Pinned bool `json:"pinned,omitempty"`
	// Created is when the session was made.
	Created time.Time `json:"created"`
}

// Session is one live session. Its methods are safe for concurrent use.
type Session struct {
	mu      sync.Mutex
	rec     Record
	jar     *cookiejar.Jar
	cookies map[cookieKey]Cookie
	retired bool
}

type cookieKey struct{ domain, path, name string }

func newSession(rec Record, now time.Time) *Session {
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	s := &Session{rec: rec, jar: jar, cookies: map[cookieKey]Cookie{}}
	for _, c := range rec.Cookies {
		if !c.Expires.IsZero() && !c.Expires.After(now) {
			continue
		}
		u, err := url.Parse(c.URL)
		if err != nil {
			continue
		}
		s.setCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Expires: c.Expires, Secure: c.Secure, HttpOnly: c.HTTPOnly}})
	}
	s.rec.Cookies = nil
	return s
}

// ID returns the session's name.
func (s *Session) ID() string { return s.rec.ID }

// Proxy returns the label of the session's proxy ("" for none).
func (s *Session) Proxy() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.Proxy
}

// SetProxy binds the session to the proxy labelled label.
func (s *Session) SetProxy(label string) {
	s.mu.Lock()
	s.rec.Proxy = label
	s.mu.Unlock()
}

// Headers returns a copy of the session's headers.
func (s *Session) Headers() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.rec.Headers))
	for k, v := range s.rec.Headers {
		out[k] = v
	}
	return out
}

// Retired reports whether the session was retired.
func (s *Session) Retired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retired
}

// Jar returns the session's cookie jar. Cookies set in it are remembered
// for the Store (with their expiry), so they survive a pause.
func (s *Session) Jar() http.CookieJar { return (*sessionJar)(s) }

type sessionJar Session

func (j *sessionJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	(*Session)(j).setCookies(u, cookies)
}

func (j *sessionJar) Cookies(u *url.URL) []*http.Cookie { return j.jar.Cookies(u) }

func (s *Session) setCookies(u *url.URL, cookies []*http.Cookie) {
	s.jar.SetCookies(u, cookies)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cookies {
		k := cookieKey{c.Domain, c.Path, c.Name}
		if k.domain == "" {
			k.domain = u.Hostname()
		}
		exp := c.Expires
		if c.MaxAge > 0 {
			exp = now.Add(time.Duration(c.MaxAge) * time.Second)
		}
		if c.MaxAge < 0 || (!exp.IsZero() && !exp.After(now)) {
			delete(s.cookies, k)
			continue
		}
		s.cookies[k] = Cookie{URL: (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String(),
			Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Expires: exp, Secure: c.Secure, HTTPOnly: c.HttpOnly}
	}
}

// record returns the session's state for the store.
func (s *Session) record(now time.Time) Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec
	r.Headers = s.headersLocked()
	r.Cookies = nil
	for _, c := range s.cookies {
		if c.Expires.IsZero() || c.Expires.After(now) {
			r.Cookies = append(r.Cookies, c)
		}
	}
	return r
}

// headersLocked copies the headers; the caller holds s.mu.
func (s *Session) headersLocked() map[string]string {
	out := make(map[string]string, len(s.rec.Headers))
	for k, v := range s.rec.Headers {
		out[k] = v
	}
	return out
}

type ctxKey struct{}

// NewContext returns ctx carrying s: the Cookies middleware uses the
// session's jar and the ProxyPool middleware its proxy.
func NewContext(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// FromContext returns the session of ctx, or nil.
func FromContext(ctx context.Context) *Session {
	s, _ := ctx.Value(ctxKey{}).(*Session)
	return s
}
