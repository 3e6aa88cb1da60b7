package downloader

import (
	"context"
	"net/http"
	"time"
)

// BrowserExchange is one HTTP exchange a browser made while it rendered a
// page (the document, each of its redirect hops, a stylesheet, a script,
// an image, an XHR), as the browser received it: what the render handler
// adds to a Capture for the archive (the Warc middleware writes each as a
// request and a response record).
//
// A browser hands over bodies decoded: Payload has no content coding
// (gzip, br) any more. The handler renames the header fields that
// described the encoded body (see Header), so that Header describes
// Payload.
type BrowserExchange struct {
	// Date is when the browser sent the request.
	Date time.Time
	// URL is the request's absolute URL; Method its method.
	URL, Method string
	// RequestHeader holds the header fields sent (the raw ones when the
	// browser reported them, cookies included); RequestBody the body.
	RequestHeader http.Header
	RequestBody   []byte
	// Proto is the response's protocol as net/http spells it ("HTTP/1.1",
	// "HTTP/2.0"); Status its status ("200 OK"), StatusCode its code.
	Proto, Status string
	StatusCode    int
	// Header holds the response's header fields as received, except that
	// Content-Encoding and the Content-Length of an encoded body, which
	// do not describe the decoded Payload, are renamed with the prefix
	// X-Archive-Orig- (their values kept).
	Header http.Header
	// Payload is the body as the browser decoded it, cut at
	// DOWNLOAD_MAXSIZE.
	Payload []byte
	// Truncated, when set, is why Payload is not the whole body: "length"
	// (over DOWNLOAD_MAXSIZE), "unspecified" (the browser did not keep
	// it).
	Truncated string
	// IP is the address the browser connected to (the server's, or the
	// proxy's); "" when it did not say.
	IP string
	// ResourceType is what the exchange was for, in lower case:
	// "document" (the page itself and its redirect hops), "iframe" (a
	// frame's document), or the browser's resource type of a subresource
	// ("stylesheet", "script", "image", "font", "xhr", "fetch", ...).
	ResourceType string
}

// CaptureOf returns the Capture a Warc middleware put in ctx (see
// WithCapture), or nil: a download handler other than HTTP (the browser)
// adds the exchanges it made to it, and collects nothing when there is
// none.
func CaptureOf(ctx context.Context) *Capture { return captureFrom(ctx) }

// AddBrowser adds exchanges a browser made to c.
func (c *Capture) AddBrowser(ex ...BrowserExchange) {
	c.mu.Lock()
	c.Browser = append(c.Browser, ex...)
	c.mu.Unlock()
}
