package simsite

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
)

// NewLocal builds the site of cfg without opening any listener: its hosts
// are served in-process, in the calling goroutine, by the RoundTripper
// that Transport returns, and URL(host) is "http://" + the host's name
// (give hosts names with a dot, "strict.test", for a crawler to see them
// as domains). Limiters, latency, robots.txt, records and statistics work
// as with Start; answers are buffered, so the faults that need a real
// connection (reset, truncate, endless) are refused.
//
// With nothing but in-process calls, a local site runs inside a
// testing/synctest bubble: latency, Retry-After windows, rate schedules and
// records then follow the bubble's fake clock (Config.Now defaults to
// time.Now), so a crawl of minutes takes milliseconds and measures the
// same on any machine.
func NewLocal(cfg Config) (*Server, error) {
	for i, h := range cfg.Hosts {
		for j, f := range h.Faults {
			if f.Kind != FaultSlow {
				return nil, fmt.Errorf("%w: hosts[%d].faults[%d].kind = %s: a local site (NewLocal) supports only slow faults",
					ErrInvalidConfig, i, j, f.Kind)
			}
		}
	}
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	for _, v := range s.hosts {
		v.url = "http://" + strings.ToLower(v.cfg.Name)
	}
	return s, nil
}

// Transport returns an http.RoundTripper that serves requests with the
// site's hosts, chosen by the request URL's host name (its port ignored),
// without any network: for a site made by NewLocal (or, in-process, by
// Start). An unknown host gets a 421 answer.
func (s *Server) Transport() http.RoundTripper { return localTransport{s} }

type localTransport struct{ s *Server }

func (t localTransport) RoundTrip(r *http.Request) (res *http.Response, err error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	defer func() {
		// A closed server aborts its handlers, as net/http drops the
		// connection.
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				panic(p)
			}
			res, err = nil, fmt.Errorf("simsite: %s: server closed", r.URL.Host)
		}
	}()
	in := r.Clone(r.Context())
	in.RemoteAddr = "127.0.0.1:1"
	in.RequestURI = r.URL.RequestURI()
	if in.Host == "" {
		in.Host = r.URL.Host
	}
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	if v := t.s.byName[strings.ToLower(r.URL.Hostname())]; v != nil {
		v.ServeHTTP(rec, in)
	} else {
		http.Error(rec, fmt.Sprintf("simsite: no virtual host %q", r.URL.Hostname()), http.StatusMisdirectedRequest)
	}
	res = rec.Result()
	res.Request = r
	return res, nil
}
