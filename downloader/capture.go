package downloader

import (
	"bytes"
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
	// Header is a copy of the response's header fields as received.
	Header http.Header
	// Payload is the body as read from the connection, up to where the
	// downloader stopped reading (a body over DOWNLOAD_MAXSIZE is cut).
	Payload bytes.Buffer

	mu sync.Mutex
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

// response records hres's head and returns its body, teed into Payload.
func (c *Capture) response(hres *http.Response) io.ReadCloser {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Responded = true
	c.Proto, c.Status, c.StatusCode = hres.Proto, hres.Status, hres.StatusCode
	c.Header = hres.Header.Clone()
	if hres.ContentLength > 0 && hres.ContentLength < maxHintBuf {
		c.Payload.Grow(int(hres.ContentLength))
	}
	return struct {
		io.Reader
		io.Closer
	}{io.TeeReader(hres.Body, &c.Payload), hres.Body}
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
