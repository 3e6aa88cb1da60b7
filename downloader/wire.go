package downloader

import (
	"context"
	"net/http/httptrace"
)

type wireKey struct{}

// WithWire returns ctx carrying fn, which Fetch calls when the request has
// been written to its connection: after the dial and TLS handshake of a
// new connection, at once on a reused one (and again if net/http retries
// the request on another connection). The engine reports that moment to
// the throttler (throttling.Throttler.Wired), so a host's delay counts
// from when its request reached the wire, not from its admission. fn runs
// on the transport's goroutine: it must be quick.
func WithWire(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, wireKey{}, fn)
}

// traceWire adds fn of WithWire to ctx as an httptrace hook.
func traceWire(ctx context.Context) context.Context {
	fn, _ := ctx.Value(wireKey{}).(func())
	if fn == nil {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			fn()
		}
	}})
}
