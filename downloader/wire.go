package downloader

import (
	"context"
	"crypto/tls"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
)

type wireKey struct{}

// WithWire returns ctx carrying fn, which Fetch calls when the request has
// been written to its connection: after the dial and TLS handshake of a
// new connection, at once on a reused one (and again if net/http retries
// the request on another connection). The engine reports that moment to
// the throttler (throttling.Throttler.Wired), so a host's delay counts
// from when its request reached the wire, not from its admission. fn runs
// on the transport's goroutine: it must be quick.
//
// Over HTTP/1 (plain or TLS) fn runs once the write that puts the end of
// the request on the connection has returned: net/http reports a request
// written (httptrace's WroteRequest) when it is in the connection's write
// buffer, before the buffer is flushed, and a goroutine descheduled in
// between would send it later than reported. So the request reached the
// server's socket before fn runs, never after. When the request ended
// exactly on a full buffer (nothing left to flush), fn runs when the
// response's first byte arrives. Over HTTP/2, and with a custom
// Transport, fn runs at WroteRequest.
func WithWire(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, wireKey{}, fn)
}

// traceWire adds fn of WithWire to ctx as httptrace hooks.
func traceWire(ctx context.Context) context.Context {
	fn, _ := ctx.Value(wireKey{}).(func())
	if fn == nil {
		return ctx
	}
	w := &wireTrace{fn: fn}
	w.hooks = httptrace.ClientTrace{GotConn: w.gotConn, WroteRequest: w.wroteRequest, GotFirstResponseByte: w.fire}
	return httptrace.WithClientTrace(ctx, &w.hooks)
}

// wireTrace is one request's wire report.
type wireTrace struct {
	fn    func()
	hooks httptrace.ClientTrace // the hooks calling the methods below (one allocation with w)
	// conn is the tracked connection an HTTP/1 request is written to (the
	// last one net/http got for it), nil otherwise. Atomic: a request
	// net/http retries gets its next connection on another goroutine
	// than the one that wrote it.
	conn atomic.Pointer[trackedConn]
	// pending: the request is written to conn's buffer, not yet flushed.
	pending atomic.Bool
}

func (w *wireTrace) gotConn(i httptrace.GotConnInfo) {
	c := i.Conn
	if tc, ok := c.(*tls.Conn); ok {
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			w.conn.Store(nil)
			return
		}
		c = tc.NetConn()
	}
	t, _ := c.(*trackedConn)
	w.conn.Store(t)
}

func (w *wireTrace) wroteRequest(i httptrace.WroteRequestInfo) {
	if i.Err != nil {
		return
	}
	c := w.conn.Load()
	if c == nil {
		w.fn()
		return
	}
	w.pending.Store(true)
	c.afterWrite(w)
}

// fire reports the write of a pending request (called by its connection's
// next write, or at the response's first byte when no write came).
func (w *wireTrace) fire() {
	if w.pending.CompareAndSwap(true, false) {
		w.fn()
	}
}

// wireWaiters are the requests written to a connection's buffer whose
// report waits for the write that flushes it.
type wireWaiters struct {
	mu      sync.Mutex
	waiting []*wireTrace
}

func (c *trackedConn) afterWrite(w *wireTrace) {
	c.wire.mu.Lock()
	c.wire.waiting = append(c.wire.waiting, w)
	c.wire.mu.Unlock()
}

// wrote reports the requests waiting for a write that returned.
func (c *trackedConn) wrote() {
	c.wire.mu.Lock()
	ws := c.wire.waiting
	c.wire.waiting = nil
	c.wire.mu.Unlock()
	for _, w := range ws {
		w.fire()
	}
}
