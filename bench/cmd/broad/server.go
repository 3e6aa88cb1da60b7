package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

// site serves a broad scenario: one listener per host, each on its own
// loopback address and all on one port, so that the server sees every host
// as a different IP and records, per host, every request's arrival.
type site struct {
	b       scenario.Broad
	port    int
	hosts   []*host
	servers []*http.Server
	start   atomic.Int64 // UnixNano of the crawl's start (SetStart)
}

// host is one simulated host and what it saw.
type host struct {
	i       int
	class   string
	addr    string
	accepts atomic.Int64

	mu sync.Mutex
	// reqs are the arrivals, in order of arrival.
	reqs []arrival
	// strict hosts' token bucket and Retry-After window.
	tokens     float64
	refilled   time.Time
	retryUntil time.Time
	inWindow   int
	refused    int
	okPages    map[int]bool
	lastOK     time.Time
}

type arrival struct {
	// at is when the handler started; wire when the request's first bytes
	// reached the socket (the kernel's receive time, see stamp_linux.go;
	// zero where none was given); read when the server's read returned
	// them; accepted, for the first request of a connection, when the
	// connection was accepted.
	at, wire, read, accepted time.Time
	robots                   bool
	fresh                    bool // the first request on its connection
	// refused: answered 429 (a strict host's bucket was empty).
	refused bool
}

// connKey carries a connection's connState in its requests' contexts.
type connKey struct{}

// connState is a connection's request count and its timing.
type connState struct {
	n     atomic.Int64
	times *conn // nil when the listener gave a plain connection
}

// startSite listens on every host's address, on one port free on all of
// them (a few tries).
func startSite(b scenario.Broad) (*site, error) {
	var lastErr error
	for range 8 {
		s, err := tryListen(b)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func tryListen(b scenario.Broad) (*site, error) {
	first, err := stampListen(b.Addr(0) + ":0")
	if err != nil {
		return nil, err
	}
	port := first.Addr().(*net.TCPAddr).Port
	s := &site{b: b, port: port}
	ls := []net.Listener{first}
	for i := 1; i < b.Hosts; i++ {
		l, err := stampListen(net.JoinHostPort(b.Addr(i), strconv.Itoa(port)))
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, fmt.Errorf("listening on %s:%d: %w", b.Addr(i), port, err)
		}
		ls = append(ls, l)
	}
	for i, l := range ls {
		h := &host{i: i, class: b.Class(i), addr: b.Addr(i), okPages: map[int]bool{}, tokens: float64(b.StrictBurst)}
		s.hosts = append(s.hosts, h)
		// nginx's keepalive_timeout: an idle connection is closed after 75 s.
		srv := &http.Server{Handler: s.handler(h), IdleTimeout: 75 * time.Second, ReadHeaderTimeout: 30 * time.Second,
			ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				st := &connState{}
				if sc, ok := c.(stamper); ok {
					st.times = sc.stamps()
				}
				return context.WithValue(ctx, connKey{}, st)
			}}
		s.servers = append(s.servers, srv)
		go func() { _ = srv.Serve(stampListener{Listener: l, n: &h.accepts}) }()
	}
	return s, nil
}

// URLs maps host names to base URLs.
func (s *site) URLs() map[string]string {
	out := make(map[string]string, len(s.hosts))
	for _, h := range s.hosts {
		out[s.b.HostName(h.i)] = "http://" + net.JoinHostPort(h.addr, strconv.Itoa(s.port))
	}
	return out
}

func (s *site) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range s.servers {
		wg.Go(func() {
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				_ = srv.Close()
			}
		})
	}
	wg.Wait()
}

func (s *site) handler(h *host) http.HandlerFunc {
	b := s.b
	return func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		robots := r.URL.Path == "/robots.txt"
		a := arrival{at: now, robots: robots}
		if st, ok := r.Context().Value(connKey{}).(*connState); ok {
			a.fresh = st.n.Add(1) == 1
			if st.times != nil {
				a.wire, a.read = st.times.claim()
				if a.fresh {
					a.accepted = st.times.accepted
				}
			}
		}
		h.mu.Lock()
		h.reqs = append(h.reqs, a)
		refuse := false
		if !robots && h.class == scenario.ClassStrict {
			if now.Before(h.retryUntil) {
				h.inWindow++
			}
			if !h.refilled.IsZero() {
				h.tokens = min(float64(b.StrictBurst), h.tokens+now.Sub(h.refilled).Seconds()*b.StrictRate)
			}
			h.refilled = now
			if h.tokens >= 1 {
				h.tokens--
			} else {
				refuse = true
				h.reqs[len(h.reqs)-1].refused = true
				h.refused++
				h.retryUntil = now.Add(b.RetryAfter)
			}
		}
		h.mu.Unlock()

		if robots {
			body := "User-agent: *\nAllow: /\n"
			if h.class == scenario.ClassCrawlDelay {
				body += "Crawl-delay: " + strconv.FormatFloat(b.CrawlDelay.Seconds(), 'f', -1, 64) + "\n"
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(body))
			return
		}
		if refuse {
			w.Header().Set("Retry-After", strconv.Itoa(int(b.RetryAfter.Seconds())))
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		page, ok := pageOf(r.URL.Path, b.Pages)
		if !ok {
			http.NotFound(w, r)
			return
		}
		lat := b.Latency
		if h.class == scenario.ClassSlow {
			lat = b.SlowLatency
		}
		time.Sleep(lat)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(pageBody(page, b.Pages))
		done := time.Now()
		h.mu.Lock()
		h.okPages[page] = true
		if done.After(h.lastOK) {
			h.lastOK = done
		}
		h.mu.Unlock()
	}
}

// pageOf parses "/" (page 0) and "/p/N" (0 < N < pages).
func pageOf(path string, pages int) (int, bool) {
	if path == "/" {
		return 0, true
	}
	rest, ok := strings.CutPrefix(path, "/p/")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 || n >= pages {
		return 0, false
	}
	return n, true
}

// pageBody is a page of about 2 KB: the root links every page, page N the
// root and the three pages after it.
func pageBody(n, pages int) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, "<!doctype html><html><head><title>page %d</title></head><body><h1>Page %d</h1>\n", n, n)
	link := func(k int) {
		if k == 0 {
			sb.WriteString(`<a href="/">home</a>` + "\n")
			return
		}
		fmt.Fprintf(&sb, "<a href=\"/p/%d\">page %d</a>\n", k, k)
	}
	if n == 0 {
		for k := 1; k < pages; k++ {
			link(k)
		}
	} else {
		link(0)
		for j := 1; j <= 3; j++ {
			link((n + j) % pages)
		}
	}
	for sb.Len() < 2048 {
		sb.WriteString("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.</p>\n")
	}
	sb.WriteString("</body></html>\n")
	return []byte(sb.String())
}
