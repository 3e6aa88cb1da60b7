// Package proxypool keeps a crawl's pool of proxies (PROXY_LIST) and the
// health of each: a proxy that fails (cannot be connected to, breaks the
// connection, times out) or is refused (a PROXY_BAN_CODES status, or the
// spider's ban check) rests, and is tried again when its rest is over.
// Rests grow with each failure in a row, from PROXY_REST_MIN doubling up
// to PROXY_REST_MAX; a success ends the streak.
//
// The pool only decides; the ProxyPool downloader middleware (package
// middleware) routes requests through the proxies it picks, admits them
// through the proxy's throttling scope (proxy:HOST:PORT) and retries a
// refused request on another proxy. Proxy credentials never leave the
// pool's Proxy.URL: logs, stats, scope names and request meta use the
// label HOST:PORT. docs/proxies.md describes the whole feature.
package proxypool

import (
	"github.com/gocrawl/gocrawl/internal/redact"

	"bufio"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// ScopePrefix starts the name of every proxy's throttling scope.
const ScopePrefix = "proxy:"

// Proxy is one proxy of the pool.
type Proxy struct {
	// URL is the proxy URL, credentials included: only the downloader may
	// see it.
	URL *url.URL
	// Label is HOST:PORT, safe for logs, stats and meta.
	Label string
}

// Scope is the name of the proxy's throttling scope, "proxy:HOST:PORT".
func (p *Proxy) Scope() string { return ScopePrefix + p.Label }

// HostScope is the name of the scope of the requests to host through the
// proxy, "proxy:HOST:PORT|host".
func (p *Proxy) HostScope(host string) string { return ScopePrefix + p.Label + "|" + host }

// Redact returns the proxy URL s with its credentials hidden, parsable or
// not, for messages about proxies that could not be parsed.
func Redact(s string) string { return redact.String(s) }

// ParseProxy parses one proxy URL: http, https or socks5, with a host and
// an explicit port; "host:port" alone means http://host:port.
func ParseProxy(s string) (Proxy, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return Proxy{}, fmt.Errorf("%s: not a URL", Redact(s))
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return Proxy{}, fmt.Errorf("%s: scheme %q is not http, https or socks5", Redact(s), u.Scheme)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return Proxy{}, fmt.Errorf("%s: want http://[user:pass@]host:port", Redact(s))
	}
	if u.Path != "" && u.Path != "/" {
		return Proxy{}, fmt.Errorf("%s: a proxy URL has no path", Redact(s))
	}
	u.Path = ""
	return Proxy{URL: u, Label: strings.ToLower(u.Host)}, nil
}

// Load reads PROXY_LIST: a list of proxy URLs, or a single entry naming a
// file (no "://" and an existing file) with one proxy per line, blank
// lines and # comments ignored. Errors name the file and line, with any
// password hidden; every bad entry is reported. Duplicates are an error.
func Load(list []string) ([]Proxy, error) {
	type entry struct{ where, val string }
	var entries []entry
	if len(list) == 1 && !strings.Contains(list[0], "://") {
		if st, err := os.Stat(list[0]); err == nil && !st.IsDir() {
			f, err := os.Open(list[0])
			if err != nil {
				return nil, fmt.Errorf("PROXY_LIST: %v", err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for n := 1; sc.Scan(); n++ {
				line := strings.TrimSpace(sc.Text())
				if i := strings.Index(line, "#"); i >= 0 {
					line = strings.TrimSpace(line[:i])
				}
				if line != "" {
					entries = append(entries, entry{fmt.Sprintf("PROXY_LIST: %s:%d", list[0], n), line})
				}
			}
			if err := sc.Err(); err != nil {
				return nil, fmt.Errorf("PROXY_LIST: %s: %v", list[0], err)
			}
			if len(entries) == 0 {
				return nil, fmt.Errorf("PROXY_LIST: %s lists no proxy", list[0])
			}
		}
	}
	if entries == nil {
		for i, v := range list {
			if strings.TrimSpace(v) != "" {
				entries = append(entries, entry{fmt.Sprintf("PROXY_LIST[%d]", i), v})
			}
		}
	}
	var out []Proxy
	var errs []error
	seen := map[string]string{}
	for _, e := range entries {
		p, err := ParseProxy(e.val)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", e.where, err))
			continue
		}
		if first, dup := seen[p.Label]; dup {
			errs = append(errs, fmt.Errorf("%s: proxy %s is listed twice (first at %s)", e.where, p.Label, first))
			continue
		}
		seen[p.Label] = e.where
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// Options configure a Pool.
type Options struct {
	// RestMin is the rest after a first failure (PROXY_REST_MIN); each
	// further failure in a row doubles it, up to RestMax (PROXY_REST_MAX).
	RestMin, RestMax time.Duration
}

// Status is the state of one proxy, for stats and tests.
type Status struct {
	Label     string
	Requests  int
	Failures  int // failures and bans in a row
	RestUntil time.Time
}

type entry struct {
	Proxy
	requests  int
	failures  int // in a row
	restUntil time.Time
}

// Pool is a set of proxies with their health. It is safe for concurrent use.
type Pool struct {
	opts Options

	mu      sync.Mutex
	entries []*entry
	byLabel map[string]*entry
	next    int
	changed chan struct{} // closed and replaced when a proxy starts resting
}

// New returns a pool of proxies (they must have distinct labels).
func New(proxies []Proxy, opts Options) *Pool {
	if opts.RestMin <= 0 {
		opts.RestMin = 30 * time.Second
	}
	opts.RestMax = max(opts.RestMax, opts.RestMin)
	p := &Pool{opts: opts, byLabel: map[string]*entry{}, changed: make(chan struct{})}
	for _, pr := range proxies {
		e := &entry{Proxy: pr}
		p.entries = append(p.entries, e)
		p.byLabel[pr.Label] = e
	}
	return p
}

// Len returns the number of proxies.
func (p *Pool) Len() int { return len(p.entries) }

// Get returns the proxy labelled label, or nil.
func (p *Pool) Get(label string) *Proxy {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.byLabel[label]; e != nil {
		return &e.Proxy
	}
	return nil
}

// Resting reports whether the proxy labelled label rests at now (an
// unknown label is not resting).
func (p *Pool) Resting(label string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.byLabel[label]
	return e != nil && now.Before(e.restUntil)
}

// Pick returns the next proxy in turn that is not resting at now, skipping
// those in avoid (the proxies a request already failed on) while others
// are available, and preferring, among the proxies not resting, one for
// which free(proxy) is true (its throttling scope has room); free may be
// nil. When every proxy rests it returns nil and how long until the first
// rest ends.
func (p *Pool) Pick(now time.Time, avoid []string, free func(*Proxy) bool) (*Proxy, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.entries)
	if n == 0 {
		return nil, 0
	}
	var fallback, avoided *entry
	for i := range n {
		e := p.entries[(p.next+i)%n]
		if now.Before(e.restUntil) {
			continue
		}
		if slices.Contains(avoid, e.Label) {
			if avoided == nil {
				avoided = e
			}
			continue
		}
		if free == nil || free(&e.Proxy) {
			p.next = (p.next + i + 1) % n
			e.requests++
			return &e.Proxy, 0
		}
		if fallback == nil {
			fallback = e
		}
	}
	if fallback == nil {
		fallback = avoided
	}
	if fallback != nil {
		fallback.requests++
		return &fallback.Proxy, 0
	}
	wait := time.Duration(0)
	for _, e := range p.entries {
		if w := e.restUntil.Sub(now); wait == 0 || w < wait {
			wait = w
		}
	}
	return nil, wait
}

// Succeeded ends the failure streak of the proxy labelled label.
func (p *Pool) Succeeded(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.byLabel[label]; e != nil {
		e.failures = 0
	}
}

// Failed records a failure or a ban of the proxy labelled label at now and
// rests it: RestMin for the first in a row, doubling up to RestMax. It
// returns the rest. Failures of requests sent before the current rest
// began do not lengthen it (requests in flight through a proxy that was
// just banned all come back refused).
func (p *Pool) Failed(label string, now, sentAt time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.byLabel[label]
	if e == nil {
		return 0
	}
	if now.Before(e.restUntil) && !sentAt.IsZero() && sentAt.Before(e.restUntil) {
		return e.restUntil.Sub(now)
	}
	e.failures++
	rest := p.opts.RestMin
	for i := 1; i < e.failures && rest < p.opts.RestMax; i++ {
		rest *= 2
	}
	rest = min(rest, p.opts.RestMax)
	e.restUntil = now.Add(rest)
	close(p.changed)
	p.changed = make(chan struct{})
	return rest
}

// Changed returns a channel closed when a proxy next starts resting:
// whoever waits to send through a proxy watches it, so as not to send
// through one that was refused meanwhile.
func (p *Pool) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Statuses returns every proxy's state, in PROXY_LIST order.
func (p *Pool) Statuses() []Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Status, len(p.entries))
	for i, e := range p.entries {
		out[i] = Status{Label: e.Label, Requests: e.requests, Failures: e.failures, RestUntil: e.restUntil}
	}
	return out
}
