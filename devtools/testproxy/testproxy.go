// Package testproxy is a small HTTP forward proxy for tests: it forwards
// absolute-form requests (http://) and tunnels CONNECT (https://), can
// require Basic proxy credentials, can refuse everything (a banned
// proxy), and logs every request it receives, so that tests check from
// the proxy's own log what went through it.
package testproxy

import (
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Entry is one request the proxy received.
type Entry struct {
	At     time.Time
	Method string
	Target string // the absolute URL, or host:port for CONNECT
	Status int    // what the proxy answered (200 for a tunnel)
}

// Proxy is a running test proxy.
type Proxy struct {
	// Name is added to forwarded requests as the X-Test-Proxy header, so
	// the target server can tell proxied requests from direct ones.
	Name string
	// User and Pass, when set, are required in Proxy-Authorization.
	User, Pass string
	// BanStatus, when set, answers requests with that status (a proxy
	// whose exit IP the site refuses): every request, or those after the
	// first BanAfter.
	BanStatus int
	BanAfter  int

	srv  *http.Server
	ln   net.Listener
	mu   sync.Mutex
	log  []Entry
	seen int
}

// Start starts p on a free port of 127.0.0.1.
func Start(p *Proxy) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.ln = ln
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns the proxy URL, with credentials when it has any.
func (p *Proxy) URL() string {
	if p.User != "" {
		return "http://" + p.User + ":" + p.Pass + "@" + p.Addr()
	}
	return "http://" + p.Addr()
}

// Close stops the proxy.
func (p *Proxy) Close() { _ = p.srv.Close() }

// Log returns a copy of the requests received so far.
func (p *Proxy) Log() []Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Entry(nil), p.log...)
}

func (p *Proxy) record(r *http.Request, status int) {
	target := r.URL.String()
	if r.Method == http.MethodConnect {
		target = r.Host
	}
	p.mu.Lock()
	p.log = append(p.log, Entry{At: time.Now(), Method: r.Method, Target: target, Status: status})
	p.mu.Unlock()
}

func (p *Proxy) refuse() bool {
	if p.BanStatus == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen++
	return p.seen > p.BanAfter
}

func (p *Proxy) authorized(r *http.Request) bool {
	if p.User == "" {
		return true
	}
	h := r.Header.Get("Proxy-Authorization")
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(p.User+":"+p.Pass))
	return h == want
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case !p.authorized(r):
		p.record(r, http.StatusProxyAuthRequired)
		w.Header().Set("Proxy-Authenticate", `Basic realm="test"`)
		http.Error(w, "proxy credentials required", http.StatusProxyAuthRequired)
		return
	case p.refuse():
		p.record(r, p.BanStatus)
		http.Error(w, "refused", p.BanStatus)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() {
		p.record(r, http.StatusBadRequest)
		http.Error(w, "not a proxy request (want absolute-form)", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Authorization")
	out.Header.Del("Proxy-Connection")
	out.Header.Set("X-Test-Proxy", p.Name)
	res, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		p.record(r, http.StatusBadGateway)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	p.record(r, res.StatusCode)
	for k, vs := range res.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.Copy(w, res.Body)
}

func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	dst, err := net.DialTimeout("tcp", r.Host, 10*time.Second)
	if err != nil {
		p.record(r, http.StatusBadGateway)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		dst.Close()
		http.Error(w, "no hijacking", http.StatusInternalServerError)
		return
	}
	p.record(r, http.StatusOK)
	src, buf, err := hj.Hijack()
	if err != nil {
		dst.Close()
		return
	}
	_, _ = src.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	go func() {
		if buf.Reader.Buffered() > 0 {
			b, _ := buf.Reader.Peek(buf.Reader.Buffered())
			_, _ = dst.Write(b)
		}
		_, _ = io.Copy(dst, src)
		dst.Close()
	}()
	_, _ = io.Copy(src, dst)
	src.Close()
}

// Dead returns the address of a port nothing listens on (a proxy that is
// down: connections are refused).
func Dead() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:1"
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Targets returns the targets of the log entries, for messages.
func Targets(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Method + " " + e.Target + "\n")
	}
	return b.String()
}
