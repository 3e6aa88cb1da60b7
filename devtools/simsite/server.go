package simsite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Server serves the virtual hosts of a Config on 127.0.0.1, each on its own
// port, and records every request. Create it with Start; it is safe for
// concurrent use.
type Server struct {
	cfg    Config
	hosts  []*vhost
	byName map[string]*vhost
	rec    recorder
	log    zerolog.Logger

	servers   []*http.Server
	sharedURL string

	done      chan struct{}
	mu        sync.Mutex // guards closed and handlers.Add
	closed    bool
	handlers  sync.WaitGroup
	serving   sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// vhost is one virtual host.
type vhost struct {
	s       *Server
	cfg     HostConfig
	url     string
	graph   *Graph // nil when cfg.Content is set
	lim     *limiter
	latency *latencySampler
	faults  *faultPicker
	robots  string
	content http.Handler // robots, then Content or the generated pages
	busy    atomic.Int64 // admitted requests in progress (LatencyConfig.Capacity)
}

// Start validates cfg, opens one listener per host on 127.0.0.1 (and the
// shared listener if cfg.Shared), and serves until Close is called or ctx
// is done.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	var listeners []net.Listener
	fail := func(err error) (*Server, error) {
		for _, ln := range listeners {
			_ = ln.Close()
		}
		return nil, err
	}
	for _, v := range s.hosts {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(v.cfg.Port)))
		if err != nil {
			return fail(fmt.Errorf("simsite: host %q: %w", v.cfg.Name, err))
		}
		listeners = append(listeners, ln)
		v.url = "http://" + ln.Addr().String()
	}
	if s.cfg.Shared {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.cfg.SharedPort)))
		if err != nil {
			return fail(fmt.Errorf("simsite: shared listener: %w", err))
		}
		listeners = append(listeners, ln)
		s.sharedURL = "http://" + ln.Addr().String()
	}

	errorLog := log.New(s.log, "", 0)
	for i, ln := range listeners {
		var h http.Handler = http.HandlerFunc(s.route)
		if i < len(s.hosts) {
			h = s.hosts[i]
		}
		hs := &http.Server{Handler: h, ErrorLog: errorLog, ReadHeaderTimeout: 30 * time.Second}
		s.servers = append(s.servers, hs)
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			_ = hs.Serve(ln)
		}()
	}
	for _, v := range s.hosts {
		s.log.Debug().Str("host", v.cfg.Name).Str("url", v.url).Msg("serving")
	}
	if ctx.Done() != nil {
		context.AfterFunc(ctx, func() { _ = s.Close() })
	}
	return s, nil
}

// newServer validates cfg and builds its hosts, without listeners.
func newServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Hosts = append([]HostConfig(nil), cfg.Hosts...)
	for i := range cfg.Hosts {
		cfg.Hosts[i].Faults = append([]FaultConfig(nil), cfg.Hosts[i].Faults...)
		cfg.Hosts[i].Limit.Schedule = append([]RateChange(nil), cfg.Hosts[i].Limit.Schedule...)
	}
	cfg.EnsureDefaults()

	s := &Server{
		cfg:    cfg,
		byName: map[string]*vhost{},
		log:    cfg.Logger.With().Str("component", "simsite").Logger(),
		done:   make(chan struct{}),
	}
	s.rec.max = cfg.MaxRecords
	for _, h := range cfg.Hosts {
		v := &vhost{
			s:       s,
			cfg:     h,
			latency: newLatencySampler(h.Latency, h.Seed),
			faults:  newFaultPicker(h.Faults, h.Seed),
			robots:  robotsBody(h.Robots),
		}
		if h.Content == nil {
			g, err := NewGraph(h.Pages, h.Seed)
			if err != nil {
				return nil, err
			}
			v.graph = g
		}
		if h.Limit.Enabled() {
			v.lim = newLimiter(h.Limit)
		}
		v.content = http.HandlerFunc(v.serveContent)
		s.hosts = append(s.hosts, v)
		s.byName[strings.ToLower(h.Name)] = v
	}
	return s, nil
}

// Close stops every listener, drops every connection (ending endless and
// slow bodies), and waits for the handlers to return. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		var errs []error
		for _, hs := range s.servers {
			errs = append(errs, hs.Close())
		}
		s.serving.Wait()
		s.handlers.Wait()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// URL is the base URL of the named host, like "http://127.0.0.1:41234"
// (no trailing slash), or "" when there is no such host.
func (s *Server) URL(host string) string {
	if v := s.byName[strings.ToLower(host)]; v != nil {
		return v.url
	}
	return ""
}

// SharedURL is the base URL of the shared listener that routes by Host
// header, or "" when Config.Shared is false. Send a request there with
// req.Host set to a host's Name.
func (s *Server) SharedURL() string { return s.sharedURL }

// Hosts lists the host names in config order.
func (s *Server) Hosts() []string {
	out := make([]string, len(s.hosts))
	for i, v := range s.hosts {
		out[i] = v.cfg.Name
	}
	return out
}

// Graph is the page graph of the named host; nil for an unknown host or a
// host with a Content handler.
func (s *Server) Graph(host string) *Graph {
	if v := s.byName[strings.ToLower(host)]; v != nil {
		return v.graph
	}
	return nil
}

// Records returns a copy of the records so far, ordered by start.
func (s *Server) Records() Records { return s.rec.snapshot(false) }

// ResetRecords returns the records so far and forgets them, e.g. between
// two crawls against the same server. Limiter state is kept.
func (s *Server) ResetRecords() Records { return s.rec.snapshot(true) }

// DroppedRecords counts the records forgotten because of
// Config.MaxRecords.
func (s *Server) DroppedRecords() int64 {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return s.rec.dropped
}

// Stats summarises the records so far, per host name (hosts without
// requests included).
func (s *Server) Stats() map[string]HostStats {
	recs := s.Records()
	out := make(map[string]HostStats, len(s.hosts))
	for _, v := range s.hosts {
		out[v.cfg.Name] = recs.Host(v.cfg.Name).Stats()
	}
	return out
}

// route serves the shared listener: the Host header picks the host.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	name := r.Host
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	v := s.byName[strings.ToLower(name)]
	if v == nil {
		http.Error(w, fmt.Sprintf("simsite: no virtual host %q", name), http.StatusMisdirectedRequest)
		return
	}
	v.ServeHTTP(w, r)
}

func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// ServeHTTP runs the request through recording, limiter, latency, faults
// and content, in that order.
func (v *vhost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := v.s
	if !s.enter() {
		panic(http.ErrAbortHandler)
	}
	defer s.handlers.Done()
	now := s.cfg.Now
	rw := &recordingWriter{ResponseWriter: w}
	rec := Record{
		Start:      now(),
		Host:       v.cfg.Name,
		Method:     r.Method,
		Path:       r.URL.RequestURI(),
		RemoteAddr: r.RemoteAddr,
		Client:     v.clientKey(r),
	}
	defer func() {
		rec.End = now()
		rec.Status = rw.status
		if rw.hijacked {
			rec.Status = 0
		}
		rec.Bytes = rw.bytes
		s.rec.add(rec)
	}()

	if v.lim != nil {
		d := v.lim.admit(rec.Client, rec.Start)
		if d.allowed {
			defer v.lim.release(rec.Client)
		}
		rec.RetryAfterUntil = retryAfter(rw.Header(), v.cfg.Limit, d, rec.Start)
		if !d.allowed {
			rec.Limited = true
			v.serveLimited(rw)
			return
		}
	}
	lat := v.latency.sample()
	if c := v.cfg.Latency.Capacity; c > 0 {
		n := v.busy.Add(1)
		defer v.busy.Add(-1)
		if n > int64(c) {
			lat = time.Duration(float64(lat) * float64(n) / float64(c))
		}
	}
	if err := sleep(r.Context(), lat, s.done); err != nil {
		return // client or server gone: nothing sent, status 0
	}
	if f := v.faults.pick(r.URL.Path); f != nil {
		rec.Fault = f.Kind
		s.log.Debug().Str("host", v.cfg.Name).Str("path", rec.Path).Str("fault", string(f.Kind)).Msg("fault injected")
		serveFault(r.Context(), rw, r, *f, v.content, s.done)
		return
	}
	v.content.ServeHTTP(rw, r)
}

func (v *vhost) clientKey(r *http.Request) string {
	if v.cfg.Limit.Key == KeyGlobal {
		return "*"
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func (v *vhost) serveLimited(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if v.cfg.Limit.SoftBlock {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(maintenancePage))
		return
	}
	status := v.cfg.Limit.Status
	w.WriteHeader(status)
	_, _ = w.Write([]byte(limitedPage(status)))
}

// serveContent serves robots.txt (when configured), then the Content
// handler or the generated pages.
func (v *vhost) serveContent(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" && v.cfg.Robots.configured() {
		status := v.cfg.Robots.Status
		if status == 0 || status == http.StatusOK {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Content-Length", strconv.Itoa(len(v.robots)))
			_, _ = w.Write([]byte(v.robots))
			return
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	if v.cfg.Content != nil {
		v.cfg.Content.ServeHTTP(w, r)
		return
	}
	i, ok := v.graph.pageIndex(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	renderPage(buf, v.graph, i, v.cfg.Name, r.Host, v.cfg.Pages)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// recordingWriter notes the status and body size of an answer.
type recordingWriter struct {
	http.ResponseWriter
	status   int
	bytes    int64
	hijacked bool
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client (http.Flusher).
func (w *recordingWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting the error, used by http.ResponseController.
func (w *recordingWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack takes over the connection (used by the reset fault).
func (w *recordingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return conn, brw, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
