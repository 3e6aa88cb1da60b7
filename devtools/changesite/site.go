// Package changesite is a web site whose pages change when a test says
// so, for the recrawl tests and benchmark: each page has a validator kind
// (ETag, Last-Modified, none, or an ETag that changes on every response),
// a version the test bumps to change it, and may be made gone (404) or
// added. The site counts what it sends (responses by status, bytes of
// status lines, headers and bodies) and the conditional requests it gets.
//
// Pages are /p/<i>; / links to every page that is not gone, and a page
// links to the pages listed in its Links.
package changesite

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Validators is how a page answers conditional requests.
type Validators int

const (
	// ETagAndLastModified sends both and answers 304 to either.
	ETagAndLastModified Validators = iota
	// LastModifiedOnly sends Last-Modified and answers If-Modified-Since.
	LastModifiedOnly
	// NoValidators sends neither and never answers 304.
	NoValidators
	// ChurningETag sends a new ETag on every response (never 304), the
	// content unchanged.
	ChurningETag
)

// Page is one page's state.
type Page struct {
	Validators Validators
	Version    int   // bump it to change the page's content
	Gone       bool  // answer 404
	Links      []int // pages this page links to
	// Padding is bytes of filler text, to give pages a realistic size.
	Padding int
}

// Site is the server's handler.
type Site struct {
	mu    sync.Mutex
	pages map[int]*Page
	hits  map[string]int
	base  time.Time
	n     atomic.Int64

	// Nonce puts a number that changes on every response in a script of
	// each page (set it before serving): the body changes, the text does
	// not.
	Nonce bool
	// Latency is how long every answer takes (set it before serving).
	Latency time.Duration

	// Counters of what was sent and received.
	Requests, NotModified, Conditional, IfNoneMatch atomic.Int64
	BodyBytes, HeaderBytes                          atomic.Int64
}

// New returns a site of n pages with validators v (page i links to no
// page; / links to all).
func New(n int, v Validators) *Site {
	s := &Site{pages: map[int]*Page{}, hits: map[string]int{}, base: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := range n {
		s.pages[i] = &Page{Validators: v}
	}
	return s
}

// Set replaces page i (adding it when new).
func (s *Site) Set(i int, p Page) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := p
	s.pages[i] = &cp
}

// Update changes page i with fn.
func (s *Site) Update(i int, fn func(p *Page)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.pages[i])
}

// Bytes is every byte sent: status lines, headers and bodies.
func (s *Site) Bytes() int64 { return s.BodyBytes.Load() + s.HeaderBytes.Load() }

// Hits returns how many requests each path got since the last Reset.
func (s *Site) Hits() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.hits))
	for k, v := range s.hits {
		out[k] = v
	}
	return out
}

// Reset zeroes the counters.
func (s *Site) Reset() {
	s.mu.Lock()
	s.hits = map[string]int{}
	s.mu.Unlock()
	for _, c := range []*atomic.Int64{&s.Requests, &s.NotModified, &s.Conditional, &s.IfNoneMatch, &s.BodyBytes, &s.HeaderBytes} {
		c.Store(0)
	}
}

func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	if s.Latency > 0 {
		time.Sleep(s.Latency)
	}
	if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
		s.Conditional.Add(1)
	}
	if r.Header.Get("If-None-Match") != "" {
		s.IfNoneMatch.Add(1)
	}
	if r.URL.Path == "/robots.txt" {
		s.send(w, http.StatusNotFound, "")
		return
	}
	if r.URL.Path == "/" {
		s.send(w, http.StatusOK, s.index())
		return
	}
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
	s.mu.Lock()
	p, ok := s.pages[i]
	var cp Page
	if ok {
		cp = *p
		cp.Links = append([]int(nil), p.Links...)
	}
	s.mu.Unlock()
	if err != nil || !strings.HasPrefix(r.URL.Path, "/p/") || !ok || cp.Gone {
		s.send(w, http.StatusNotFound, "not found")
		return
	}
	etag := fmt.Sprintf(`"%d-%d"`, i, cp.Version)
	lm := s.base.Add(time.Duration(cp.Version) * time.Hour).Format(http.TimeFormat)
	switch cp.Validators {
	case ETagAndLastModified:
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", lm)
		if inm := r.Header.Get("If-None-Match"); inm != "" {
			if inm == etag {
				s.notModified(w)
				return
			}
		} else if r.Header.Get("If-Modified-Since") == lm {
			s.notModified(w)
			return
		}
	case LastModifiedOnly:
		w.Header().Set("Last-Modified", lm)
		if r.Header.Get("If-Modified-Since") == lm {
			s.notModified(w)
			return
		}
	case ChurningETag:
		w.Header().Set("ETag", fmt.Sprintf(`"%d-%d-%d"`, i, cp.Version, s.n.Add(1)))
	}
	s.send(w, http.StatusOK, page(i, cp, s.Nonce))
}

func (s *Site) notModified(w http.ResponseWriter) {
	s.NotModified.Add(1)
	s.send(w, http.StatusNotModified, "")
}

// send writes the answer and counts its bytes as HTTP/1.1 would frame
// them (status line, headers, blank line, body).
func (s *Site) send(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	if status != http.StatusNotModified {
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	h.Set("Date", "Thu, 01 Jan 2026 00:00:00 GMT")
	n := len("HTTP/1.1 200 OK\r\n") + 2
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	s.HeaderBytes.Add(int64(n))
	w.WriteHeader(status)
	if status != http.StatusNotModified {
		m, _ := w.Write([]byte(body))
		s.BodyBytes.Add(int64(m))
	}
}

func (s *Site) index() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	b.WriteString("<html><head><title>index</title></head><body>")
	last := 0
	for i := range s.pages {
		last = max(last, i)
	}
	for i := 0; i <= last; i++ {
		if p, ok := s.pages[i]; ok && !p.Gone {
			fmt.Fprintf(&b, `<a href="/p/%d">%d</a> `, i, i)
		}
	}
	b.WriteString("</body></html>")
	return b.String()
}

func page(i int, p Page, nonce bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>page %d</title>", i)
	if nonce {
		fmt.Fprintf(&b, "<script>var nonce=%d;</script>", time.Now().UnixNano())
	}
	fmt.Fprintf(&b, "</head><body><p>page %d version %d</p>", i, p.Version)
	for _, l := range p.Links {
		fmt.Fprintf(&b, `<a href="/p/%d">%d</a> `, l, l)
	}
	if p.Padding > 0 {
		b.WriteString("<p>")
		b.WriteString(strings.Repeat("lorem ipsum ", p.Padding/12+1)[:p.Padding])
		b.WriteString("</p>")
	}
	b.WriteString("</body></html>")
	return b.String()
}
