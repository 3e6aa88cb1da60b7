package downloader

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
)

// Capture records one download as it went over the wire, for archiving
// (the Warc middleware writes it as WARC records): the request as sent,
// the address connected to, the response's status line and header fields
// as received (before the downloader decodes the body and drops
// Content-Encoding), and the body as received, with its content coding
// (gzip, br) but without its transfer coding (chunked).
//
// Put a Capture in the context of Fetch with WithCapture; after Fetch
// returns, whether with a response or an error, it holds what was
// exchanged: Responded is false when no response came.
type Capture struct {
	// Request is the request as sent (the downloader's own header fields
	// included); nil when none could be built.
	Request *http.Request
	// RequestBody is the body sent.
	RequestBody []byte
	// RemoteAddr is the address (host:port) of the connection used: the
	// server's, or the proxy's.
	RemoteAddr string
	// Responded is set when a response's head arrived.
	Responded bool
	// Proto and Status are the response's status line ("HTTP/1.1",
	// "200 OK"); StatusCode its code.
	Proto, Status string
	StatusCode    int
	// Header is the response's header fields as received. It is the
	// response's own Header when the downloader leaves it as received
	// (no content coding to remove), a copy otherwise: read it, do not
	// change it.
	Header http.Header
	// Payload is the body as read from the connection, up to where the
	// downloader stopped reading (a body over DOWNLOAD_MAXSIZE is cut).
	// A body the downloader does not decode (no Content-Encoding) is not
	// copied: Payload is the response's Body itself, so do not change it.
	// A body it decodes is kept as received, a copy counted in the
	// crawl's memory budget (DOWNLOAD_MEMORY_BUDGET) until Release.
	Payload []byte
	// Browser holds the exchanges a browser made to render the request
	// (see BrowserExchange); empty for a download over plain HTTP.
	Browser []BrowserExchange

	mu    sync.Mutex
	lease *Lease
}

// Release gives back the memory budget the captured payload holds; call it
// once the payload is archived. The response's body keeps its own.
func (c *Capture) Release() {
	c.mu.Lock()
	l := c.lease
	c.lease = nil
	c.mu.Unlock()
	l.ReleaseCapture()
}

type captureKey struct{}

// WithCapture returns a context under which Fetch fills c.
func WithCapture(ctx context.Context, c *Capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

func captureFrom(ctx context.Context) *Capture {
	c, _ := ctx.Value(captureKey{}).(*Capture)
	return c
}

// trace makes hreq report the connection it gets to c.
func (c *Capture) trace(hreq *http.Request, body []byte) *http.Request {
	c.RequestBody = body
	t := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if i.Conn == nil {
			return
		}
		c.mu.Lock()
		c.RemoteAddr = i.Conn.RemoteAddr().String()
		c.mu.Unlock()
	}}
	hreq = hreq.WithContext(httptrace.WithClientTrace(hreq.Context(), t))
	c.Request = hreq
	return hreq
}

// response records hres's head.
func (c *Capture) response(hres *http.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Responded = true
	c.Proto, c.Status, c.StatusCode = hres.Proto, hres.Status, hres.StatusCode
	c.Header = hres.Header // copied by keepHeader if the downloader changes it
}

// keepHeader gives c a copy of the response's header fields, which the
// downloader is about to change (it drops Content-Encoding when it
// decodes the body).
func (c *Capture) keepHeader() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Header = c.Header.Clone()
}

// tee returns body, copying what is read from it into Payload, every
// growth of Payload counted in lease first (old and new buffer while it
// grows, as for the body).
func (c *Capture) tee(ctx context.Context, body io.ReadCloser, hint int64, lease *Lease) io.ReadCloser {
	c.mu.Lock()
	c.lease = lease
	c.mu.Unlock()
	w := &captureWriter{c: c, ctx: ctx, lease: lease, hint: hint}
	return struct {
		io.Reader
		io.Closer
	}{io.TeeReader(body, w), body}
}

type captureWriter struct {
	c     *Capture
	ctx   context.Context
	lease *Lease
	hint  int64
}

func (w *captureWriter) Write(p []byte) (int, error) {
	c := w.c
	if need := len(c.Payload) + len(p); need > cap(c.Payload) {
		next := max(2*cap(c.Payload), need, 4<<10)
		if cap(c.Payload) == 0 && w.hint >= int64(need) && w.hint < maxHintBuf {
			next = int(w.hint)
		}
		if err := w.lease.hold(w.ctx, int64(cap(c.Payload)+next)); err != nil {
			return 0, err
		}
		nb := make([]byte, len(c.Payload), next)
		copy(nb, c.Payload)
		c.Payload = nb
		if err := w.lease.hold(w.ctx, int64(next)); err != nil {
			return 0, err
		}
	}
	c.Payload = append(c.Payload, p...)
	return len(p), nil
}

// Remote returns RemoteAddr, safe to call while a download runs.
func (c *Capture) Remote() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.RemoteAddr
}

// Decode undoes a Content-Encoding (a list of gzip, x-gzip, deflate, br or
// identity, applied in order) the way the downloader does: an archived
// payload is decoded with it when it is replayed.
func Decode(encoding string, r io.Reader) (io.Reader, error) { return decoder(encoding, r) }
