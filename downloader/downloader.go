// Package downloader fetches requests over HTTP with a net/http transport
// tuned for crawling: connections reused and sized to the crawl's
// concurrency, HTTP/2 where the server offers it, a DNS cache, timeouts, and
// size limits enforced while streaming and after decompression (gzip,
// deflate, br), so a decompression bomb stops at the limit.
//
// With a netguard.Guard (SSRF_PROTECTION_ENABLED) connections to internal
// addresses are refused after DNS resolution, with a
// *netguard.BlockedError.
//
// Failures are *Error values with a kind from package errkind
// (DownloadFailed, DownloadTimeout, ResponseDataLoss, ResponseTooLarge) that
// settings such as BACKOFF_EXCEPTIONS and RETRY_EXCEPTIONS match by name.
//
// The downloader does not follow redirects, keep cookies or retry: those
// are downloader middlewares, so that every new request goes back through
// the scheduler and throttling.
package downloader

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/downloader/dnscache"
	"github.com/gocrawl/gocrawl/downloader/netguard"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// Request meta keys read by the downloader.
const (
	// MetaDownloadTimeout overrides DOWNLOAD_TIMEOUT (seconds) for one request.
	MetaDownloadTimeout = "download_timeout"
	// MetaDownloadMaxSize overrides DOWNLOAD_MAXSIZE (bytes) for one request.
	MetaDownloadMaxSize = "download_maxsize"
	// MetaDownloadWarnSize overrides DOWNLOAD_WARNSIZE (bytes) for one request.
	MetaDownloadWarnSize = "download_warnsize"
	// MetaDownloadFailOnDataLoss overrides DOWNLOAD_FAIL_ON_DATALOSS.
	MetaDownloadFailOnDataLoss = "download_fail_on_dataloss"
	// MetaProxy sets the proxy URL for one request ("http://user:pass@host:port").
	MetaProxy = "proxy"
)

// Options configure a Downloader. Zero fields take the defaults of the
// matching settings.
type Options struct {
	// Timeout is DOWNLOAD_TIMEOUT.
	Timeout time.Duration
	// MaxSize is DOWNLOAD_MAXSIZE (0 = unlimited).
	MaxSize int64
	// WarnSize is DOWNLOAD_WARNSIZE (0 = never warn).
	WarnSize int64
	// FailOnDataLoss is DOWNLOAD_FAIL_ON_DATALOSS.
	FailOnDataLoss bool
	// Compression asks for and decodes gzip, deflate and br.
	Compression bool
	// MaxConns sizes the connection pool: the crawl's global concurrency
	// (CONCURRENT_REQUESTS; 0 or less means 100).
	MaxConns int
	// MaxConnsPerHost is the per-domain concurrency; idle connections kept
	// per host are the larger of it and MaxConns, so that a crawl of one
	// host at full concurrency reuses every connection instead of closing
	// and redialling.
	MaxConnsPerHost int
	// DNS is the cache used for dialing; nil creates one.
	DNS *dnscache.Cache
	// Log receives size warnings.
	Log zerolog.Logger
	// TLSConfig, when set, is the TLS client configuration of the tuned
	// transport (custom root CAs, client certificates); it is cloned.
	TLSConfig *tls.Config
	// Transport replaces the tuned transport altogether; optional.
	Transport http.RoundTripper
	// Guard refuses connections to internal addresses
	// (SSRF_PROTECTION_ENABLED); nil allows every address.
	Guard *netguard.Guard
	// Budget bounds the memory of the bodies being read crawl-wide
	// (DOWNLOAD_MEMORY_BUDGET); nil means no budget. See Budget and
	// WithLease.
	Budget *Budget
	// MaxOpenConns is the connection budget, the most connections open at
	// once (DOWNLOAD_MAX_CONNECTIONS): 0 derives it from the open-file
	// limit (see conns.go), a negative value means no budget.
	MaxOpenConns int
	// IdleTimeout is how long an idle connection is kept
	// (DOWNLOAD_IDLE_TIMEOUT); 0 means 120 s.
	IdleTimeout time.Duration
}

// OptionsFromSettings reads the downloader's settings.
func OptionsFromSettings(s *settings.Settings) Options {
	o := Options{
		Timeout:         s.Seconds("DOWNLOAD_TIMEOUT"),
		MaxSize:         int64(s.Int("DOWNLOAD_MAXSIZE")),
		WarnSize:        int64(s.Int("DOWNLOAD_WARNSIZE")),
		FailOnDataLoss:  s.Bool("DOWNLOAD_FAIL_ON_DATALOSS"),
		Compression:     s.Bool("COMPRESSION_ENABLED"),
		MaxConns:        s.Int("CONCURRENT_REQUESTS"),
		MaxConnsPerHost: s.Int("CONCURRENT_REQUESTS_PER_DOMAIN"),
		MaxOpenConns:    s.Int("DOWNLOAD_MAX_CONNECTIONS"),
		// A host asked once per delay keeps its connection between two
		// requests, jitter and a backoff step or two included.
		IdleTimeout: max(s.Seconds("DOWNLOAD_IDLE_TIMEOUT"), 3*s.Seconds("DOWNLOAD_DELAY")),
	}
	if s.Bool("DNSCACHE_ENABLED") {
		o.DNS = dnscache.New(s.Int("DNSCACHE_SIZE"), s.Seconds("DNS_TIMEOUT"))
	}
	o.Guard, _ = netguard.FromSettings(s) // SSRF_PROTECTION_ALLOW is checked when it is set
	o.Budget = NewBudget(MemoryBudget(int64(s.Int("DOWNLOAD_MEMORY_BUDGET"))), o.MaxConns)
	return o
}

// Downloader fetches requests. It is safe for concurrent use.
type Downloader struct {
	opts   Options
	rt     http.RoundTripper // the tuned transport, or Options.Transport
	dns    *dnscache.Cache
	budget *Budget
	conns  *connTracker // nil with a custom Transport
}

// New returns a downloader.
func New(opts Options) *Downloader {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 100
	}
	opts.MaxConnsPerHost = max(opts.MaxConnsPerHost, opts.MaxConns)
	d := &Downloader{opts: opts, dns: opts.DNS, budget: opts.Budget}
	if b := opts.Budget; b != nil && (opts.MaxSize == 0 || opts.MaxSize > b.MaxBody()) {
		opts.Log.Info().Int64("DOWNLOAD_MAXSIZE", opts.MaxSize).Int64("DOWNLOAD_MEMORY_BUDGET", b.Total()).Int64("max_body", b.MaxBody()).
			Msg("DOWNLOAD_MAXSIZE is above what DOWNLOAD_MEMORY_BUDGET lets one response hold: larger bodies fail with ResponseTooLargeError")
	}
	d.rt = opts.Transport
	if d.rt == nil {
		t := d.newTransport()
		d.conns.starved = t.CloseIdleConnections
		d.rt = t
	}
	return d
}

// Budget returns the crawl's memory budget for bodies (nil when none).
func (d *Downloader) Budget() *Budget { return d.budget }

// DNS returns the downloader's DNS cache (nil when disabled).
func (d *Downloader) DNS() *dnscache.Cache { return d.dns }

func (d *Downloader) newTransport() *http.Transport {
	var idle int
	d.conns, idle = newConns(d.opts)
	idleTimeout := d.opts.IdleTimeout
	if idleTimeout <= 0 {
		idleTimeout = 120 * time.Second
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if g := d.opts.Guard; g != nil {
		// The address actually connected to, after DNS: a name that
		// resolves, or re-resolves, to an internal address is refused.
		// A proxy the crawl was told to use is not checked (Fetch checks
		// the target of a proxied request instead).
		dialer.ControlContext = func(ctx context.Context, network, address string, _ syscall.RawConn) error {
			if _, proxied := ctx.Value(proxyKey{}).(*url.URL); proxied {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return nil
			}
			return g.CheckAddr(ap.Addr())
		}
	}
	dial := dialer.DialContext
	if d.dns != nil {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			addrs, err := d.dns.Lookup(ctx, host)
			if err != nil {
				return nil, err
			}
			var firstErr error
			for _, a := range addrs {
				c, err := dialer.DialContext(ctx, network, net.JoinHostPort(a, port))
				if err == nil {
					return c, nil
				}
				if firstErr == nil {
					firstErr = err
				}
			}
			return nil, firstErr
		}
	}
	dial = d.conns.dialer(dial)
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if d.opts.TLSConfig != nil {
		tlsConfig = d.opts.TLSConfig.Clone()
	}
	return &http.Transport{
		Proxy:                 proxyFor,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          idle,
		MaxIdleConnsPerHost:   d.opts.MaxConnsPerHost,
		IdleConnTimeout:       idleTimeout,
		TLSHandshakeTimeout:   30 * time.Second,
		ExpectContinueTimeout: time.Second,
		// We decode ourselves so that size limits apply after decompression
		// and every encoding (br included) is handled the same way.
		DisableCompression: true,
		TLSClientConfig:    tlsConfig,
		// net/http's 4 KB read buffer per connection: the connections'
		// reads go through a lazyReader (lazyread.go), which reads up to
		// 32 KB in one system call into a pooled buffer once data has
		// come, so the headers and a body of a few kilobytes still take
		// one system call, and an idle connection holds 4 KB, not 32.
	}
}

type proxyKey struct{}

// proxyFor returns the proxy set by the request's proxy meta, and no proxy
// otherwise: the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) is read by
// the HttpProxy middleware, which sets the meta, so HTTPPROXY_ENABLED=false
// really means no proxy.
func proxyFor(r *http.Request) (*url.URL, error) {
	if p, ok := r.Context().Value(proxyKey{}).(*url.URL); ok {
		return p, nil
	}
	return nil, nil
}

// Fetch downloads req and returns the response with its body read,
// decompressed and size-checked. HTTP error statuses are responses, not
// errors; errors are *Error values with a Kind.
func (d *Downloader) Fetch(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	timeout := d.opts.Timeout
	if v, ok := req.GetFloat(MetaDownloadTimeout); ok && v >= 0 {
		timeout = settings.Duration(v)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if p, ok := req.Get(MetaProxy).(string); ok && p != "" {
		pu, err := url.Parse(p)
		if err != nil {
			return nil, &Error{Kind: errkind.DownloadFailed, URL: req.URL.Redacted(), Err: errors.New("invalid proxy meta (not a URL)")}
		}
		ctx = context.WithValue(ctx, proxyKey{}, pu)
		if err := d.checkProxied(ctx, req); err != nil {
			return nil, err
		}
	}
	var body io.Reader
	if len(req.Body) > 0 {
		body = bytes.NewReader(req.Body)
	}
	hreq, err := newHTTPRequest(traceWire(ctx), req, body)
	if err != nil {
		return nil, &Error{Kind: errkind.DownloadFailed, URL: req.URL.Redacted(), Err: err}
	}
	for k, vs := range req.Header {
		hreq.Header[k] = vs
	}
	if req.Referer != "" && hreq.Header.Get("Referer") == "" {
		hreq.Header.Set("Referer", req.Referer)
	}
	if d.opts.Compression && hreq.Header.Get("Accept-Encoding") == "" {
		hreq.Header.Set("Accept-Encoding", "gzip, deflate, br")
	}
	capture := captureFrom(ctx)
	if capture != nil {
		hreq = capture.trace(hreq, req.Body)
	}
	hres, err := d.roundTrip(hreq)
	if err != nil {
		var blocked *netguard.BlockedError
		if errors.As(err, &blocked) {
			blocked.Host = req.URL.Hostname()
			return nil, blocked
		}
		if perr := proxyError(ctx, req, err); perr != nil {
			return nil, perr
		}
		return nil, classify(ctx, req, err)
	}
	defer hres.Body.Close()
	if capture != nil {
		capture.response(hres)
	}

	maxSize := d.opts.MaxSize
	if v, ok := metaBytes(req, MetaDownloadMaxSize); ok {
		maxSize = v
	}
	warnSize := d.opts.WarnSize
	if v, ok := metaBytes(req, MetaDownloadWarnSize); ok {
		warnSize = v
	}
	if maxSize > 0 && hres.ContentLength > maxSize {
		return nil, &Error{Kind: errkind.ResponseTooLarge, URL: req.URL.Redacted(),
			Err: fmt.Errorf("Content-Length %d exceeds the maximum size %d (DOWNLOAD_MAXSIZE)", hres.ContentLength, maxSize)}
	}

	res := &spider.Response{
		URL:      req.URL,
		Status:   hres.StatusCode,
		Header:   hres.Header,
		Request:  req,
		Protocol: hres.Proto,
	}
	lease := leaseFrom(ctx)
	if lease == nil && d.budget != nil {
		lease = d.budget.Lease(true)
		defer lease.Release()
	}
	decodes := d.opts.Compression && req.EffectiveMethod() != http.MethodHead && hres.Header.Get("Content-Encoding") != ""
	if capture != nil && decodes {
		// The body as received differs from the decoded one: the capture
		// keeps a copy, in the budget. Otherwise it is the body itself.
		hres.Body = capture.tee(ctx, hres.Body, hres.ContentLength, lease)
	}
	var r io.Reader = hres.Body
	hint := hres.ContentLength
	if decodes {
		r, err = decoder(hres.Header.Get("Content-Encoding"), r)
		if err != nil {
			return nil, &Error{Kind: errkind.DownloadFailed, URL: req.URL.Redacted(), Err: err}
		}
		if capture != nil {
			capture.keepHeader()
		}
		hres.Header.Del("Content-Encoding")
		hres.Header.Del("Content-Length")
		hint = -1 // the decoded length is unknown
	}
	br := bodyReader{limit: maxSize, hint: hint, lease: lease, warnAt: warnSize}
	if lease != nil {
		br.maxHold = lease.b.maxHold()
	}
	if warnSize > 0 {
		br.warn = func(n int64) {
			d.opts.Log.Warn().Str("url", req.URL.Redacted()).Int64("bytes_so_far", n).Int64("warnsize", warnSize).
				Msg("response is larger than DOWNLOAD_WARNSIZE")
		}
	}
	data, err := br.read(ctx, r)
	lease.doneGrowing()
	if capture != nil && !decodes {
		capture.Payload = data
	}
	switch {
	case errors.Is(err, errTooLarge):
		return nil, &Error{Kind: errkind.ResponseTooLarge, URL: req.URL.Redacted(),
			Err: fmt.Errorf("body exceeds the maximum size %d bytes (DOWNLOAD_MAXSIZE)", maxSize)}
	case errors.Is(err, errBudget):
		return nil, &Error{Kind: errkind.ResponseTooLarge, URL: req.URL.Redacted(),
			Err: fmt.Errorf("body exceeds %d bytes, the most the memory budget lets one response hold (DOWNLOAD_MEMORY_BUDGET)", lease.b.MaxBody())}
	case err != nil:
		if errors.Is(err, io.ErrUnexpectedEOF) && !failOnDataLoss(req, d.opts.FailOnDataLoss) && ctx.Err() == nil {
			res.Flags = append(res.Flags, "truncated")
		} else {
			lease.Release()
			return nil, classify(ctx, req, err)
		}
	}
	res.Body = data
	return res, nil
}

// newHTTPRequest is http.NewRequestWithContext for req's method, URL and
// body, without formatting the URL to parse it again: the request gets a
// copy of req.URL with the scheme lower-cased and an empty port dropped,
// which is what the round trip through a string gave, for two allocations
// and a parse less per request.
func newHTTPRequest(ctx context.Context, req *spider.Request, body io.Reader) (*http.Request, error) {
	hreq, err := http.NewRequestWithContext(ctx, req.EffectiveMethod(), "", body)
	if err != nil {
		return nil, err
	}
	u := *req.URL
	// What url.Parse of the URL's string would change: the scheme's case,
	// an empty port.
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.TrimSuffix(u.Host, ":")
	hreq.URL, hreq.Host = &u, u.Host
	return hreq, nil
}

func failOnDataLoss(req *spider.Request, def bool) bool {
	if v, ok := req.Get(MetaDownloadFailOnDataLoss).(bool); ok {
		return v
	}
	return def
}

// metaBytes reads a size in bytes from meta: a non-negative finite number
// (larger than an int64 counts as the largest int64). Other values are
// ignored.
func metaBytes(req *spider.Request, key string) (int64, bool) {
	v, ok := req.GetFloat(key)
	if !ok || v < 0 || math.IsNaN(v) {
		return 0, false
	}
	if v >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return int64(v), true
}

// decoder wraps r to undo Content-Encoding (possibly a list, applied in
// order). Unknown encodings are an error.
func decoder(encoding string, r io.Reader) (io.Reader, error) {
	if encoding == "" {
		return r, nil
	}
	encs := strings.Split(encoding, ",")
	for i := len(encs) - 1; i >= 0; i-- {
		switch e := strings.ToLower(strings.TrimSpace(encs[i])); e {
		case "", "identity":
		case "gzip", "x-gzip":
			gz, err := gzip.NewReader(r)
			if err != nil {
				return nil, fmt.Errorf("gzip body: %w", err)
			}
			r = gz
		case "deflate":
			r = newDeflateReader(r)
		case "br":
			r = brotli.NewReader(r)
		default:
			return nil, fmt.Errorf("unsupported Content-Encoding %q", e)
		}
	}
	return r, nil
}

// newDeflateReader accepts both zlib-wrapped deflate (what the RFC says) and
// raw deflate (what some servers send).
func newDeflateReader(r io.Reader) io.Reader {
	var peek [2]byte
	n, _ := io.ReadFull(r, peek[:])
	rest := io.MultiReader(bytes.NewReader(peek[:n]), r)
	if n == 2 && (uint16(peek[0])<<8|uint16(peek[1]))%31 == 0 && peek[0]&0x0f == 8 {
		if z, err := zlib.NewReader(rest); err == nil {
			return z
		}
	}
	return flate.NewReader(rest)
}

// classify wraps a transport or body error in an *Error of the right kind.
func classify(ctx context.Context, req *spider.Request, err error) error {
	u := req.URL.Redacted()
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, os.ErrDeadlineExceeded):
		return &Error{Kind: errkind.DownloadTimeout, URL: u, Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Kind: errkind.ResponseDataLoss, URL: u, Err: err}
	}
	return &Error{Kind: errkind.DownloadFailed, URL: u, Err: err}
}

// checkProxied applies the SSRF guard to the target of a request sent
// through a proxy, which resolves and connects to it itself: the target's
// name is resolved here and every address checked. (The proxy may resolve
// it differently; a proxy of your own should refuse internal addresses
// too.)
func (d *Downloader) checkProxied(ctx context.Context, req *spider.Request) error {
	g := d.opts.Guard
	if g == nil {
		return nil
	}
	host := req.URL.Hostname()
	if err := g.CheckHost(host); err != nil {
		return err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	var addrs []string
	var err error
	if d.dns != nil {
		addrs, err = d.dns.Lookup(ctx, host)
	} else {
		addrs, err = net.DefaultResolver.LookupHost(ctx, host)
	}
	if err != nil {
		return nil // the proxy reports what it cannot resolve
	}
	for _, a := range addrs {
		if ip, perr := netip.ParseAddr(a); perr == nil {
			if err := g.CheckAddr(ip); err != nil {
				err.(*netguard.BlockedError).Host = host
				return err
			}
		}
	}
	return nil
}

// CloseHost closes the open connections to the host of a throttling
// scope, scope being a host name (every port) or a host and port: the
// throttler's eviction of an idle scope (throttling.Throttler.OnEvict)
// calls it, so that a host the crawl is done with does not keep a
// connection and a file descriptor until DOWNLOAD_IDLE_TIMEOUT. A
// connection written to since the call began is left open. It returns how
// many connections it closed (none with a custom Transport).
func (d *Downloader) CloseHost(scope string) int {
	if d.conns == nil {
		return 0
	}
	return d.conns.closeHost(scope)
}

// ConnStats returns the connection counters of the tuned transport (zero
// with a custom Transport).
func (d *Downloader) ConnStats() ConnStats {
	if d.conns == nil {
		return ConnStats{}
	}
	return d.conns.stats()
}

// Close closes the idle connections of the downloader's transport. The
// engine calls it when a crawl ends; a Downloader may still be used
// afterwards (new connections are opened as needed).
func (d *Downloader) Close() {
	if c, ok := d.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
