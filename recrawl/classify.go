package recrawl

import (
	"net/http"
	"sync"
)

// Validators returns the conditional headers a revisit of r sends:
// If-None-Match from its ETag (unless useETag is false: the server's
// ETags were found to change on every response), If-Modified-Since from
// its Last-Modified. A record of a page that is gone, or never answered
// 200, has none.
func Validators(r Record, useETag bool) http.Header {
	h := http.Header{}
	if r.Change == ChangeGone {
		return h
	}
	if useETag && r.ETag != "" {
		h.Set("If-None-Match", r.ETag)
	}
	if r.LastModified != "" {
		h.Set("If-Modified-Since", r.LastModified)
	}
	return h
}

// Classify tells what a response of status with body fingerprint fp
// means for a URL whose previous record is prev (found false: none):
//
//   - 304 Not Modified: unchanged (the server compared the validators);
//   - 404 and 410: gone;
//   - 2xx: new on the first visit (or after the URL was gone), else
//     changed or unchanged by the fingerprint, whatever the validators
//     said: a server that answers 200 to a conditional request may still
//     send the same content;
//   - anything else (redirects, 5xx): ChangeNone, the visit says nothing.
func Classify(prev Record, found bool, status int, fp Hash) Change {
	switch {
	case status == http.StatusNotModified:
		if !found {
			return ChangeNone // a 304 to a request we did not make conditional
		}
		return ChangeUnchanged
	case status == http.StatusNotFound || status == http.StatusGone:
		return ChangeGone
	case status >= 200 && status < 300:
		if !found || prev.Fingerprint.IsZero() || prev.Change == ChangeGone {
			return ChangeNew
		}
		if prev.Fingerprint == fp {
			return ChangeUnchanged
		}
		return ChangeChanged
	}
	return ChangeNone
}

// Next returns prev updated by a visit that got status and header with
// fingerprint fp, classified as c, in round.
func Next(prev Record, c Change, status int, header http.Header, fp Hash, round int) Record {
	r := prev
	r.Status = status
	r.Round = round
	if c != ChangeNone {
		r.Change = c
	}
	if status >= 200 && status < 300 {
		r.ETag = header.Get("ETag")
		r.LastModified = header.Get("Last-Modified")
		r.Fingerprint = fp
	}
	if status == http.StatusNotModified {
		// A 304 may carry fresher validators (RFC 9110, 15.4.5).
		if v := header.Get("ETag"); v != "" {
			r.ETag = v
		}
		if v := header.Get("Last-Modified"); v != "" {
			r.LastModified = v
		}
	}
	return r
}

// ChurnThreshold is how many conditional requests of a scope must come
// back 200 with a new ETag but the same content before the scope's
// ETags are ignored.
const ChurnThreshold = 3

// Tracker notices servers whose ETag changes on every response (a
// per-response nonce, a load balancer mixing servers): a conditional
// request to them never gets a 304, so their ETags only cost header
// bytes. After ChurnThreshold such answers in a scope (a host) and none
// 304, the Tracker stops sending If-None-Match there; the fingerprint
// decides changed or unchanged. It is safe for concurrent use.
type Tracker struct {
	mu     sync.Mutex
	scopes map[string]*churn
	// OnChurn is called once per scope, when its ETags are given up.
	OnChurn func(scope string)
}

type churn struct {
	suspect int
	matched bool // a 304 came: the ETags work
	off     bool
}

// UseETag reports whether requests of scope should send If-None-Match.
func (t *Tracker) UseETag(scope string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.scopes[scope]
	return c == nil || !c.off
}

// Observe records the answer to a request of scope that sent
// If-None-Match sentETag (empty: none was sent).
func (t *Tracker) Observe(scope, sentETag string, status int, newETag string, c Change) {
	if sentETag == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.scopes == nil {
		t.scopes = map[string]*churn{}
	}
	s := t.scopes[scope]
	if s == nil {
		s = &churn{}
		t.scopes[scope] = s
	}
	switch {
	case status == http.StatusNotModified:
		s.matched = true
	case c == ChangeUnchanged && newETag != "" && newETag != sentETag && !s.matched && !s.off:
		s.suspect++
		if s.suspect >= ChurnThreshold {
			s.off = true
			if t.OnChurn != nil {
				defer t.OnChurn(scope)
			}
		}
	}
}
