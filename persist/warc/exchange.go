package warc

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Truncation reasons (WARC-Truncated): why a response's payload is not
// whole.
const (
	TruncatedLength     = "length"     // larger than the crawl's limit (DOWNLOAD_MAXSIZE)
	TruncatedTime       = "time"       // the download timed out
	TruncatedDisconnect = "disconnect" // the connection was lost
	TruncatedUnknown    = "unspecified"
)

// Exchange is one HTTP request and its response, as they went over the
// wire: what a Writer turns into a request record and a response (or
// revisit) record.
type Exchange struct {
	// URL is the request's absolute URL (WARC-Target-URI).
	URL string
	// Date is when the request was sent (WARC-Date of both records).
	Date time.Time
	// IP is the address of the server (or proxy) connected to
	// (WARC-IP-Address); "" when unknown.
	IP string
	// Request is the HTTP request as sent: request line, header fields,
	// blank line and body.
	Request []byte
	// Method is the request's method, for the index.
	Method string
	// ResponseHead is the response's status line and header fields, each
	// line ending in CRLF, without the blank line.
	ResponseHead []byte
	// Status is the response's status code.
	Status int
	// MIME is the response's media type, for the index.
	MIME string
	// Payload is the response body as received: with its content coding
	// (gzip, br) but without its transfer coding (chunked).
	Payload []byte
	// Truncated, when set, is why Payload is not the whole body.
	Truncated string
	// Protocol, when set, is the protocol the exchange really used
	// ("h2" for HTTP/2, "h3"), written as WARC-Protocol on both records:
	// the request and response are archived in their HTTP/1.1 form,
	// which WARC readers expect, and this field says they were not sent
	// so. Leave it empty for HTTP/1.x. See ProtocolOf.
	Protocol string
	// Fields are more WARC header fields, written on both records (the
	// page an exchange of a rendered page belongs to: WARC-Page-ID,
	// WARC-Resource-Type).
	Fields Header
}

// ProtocolOf returns the WARC-Protocol value of an HTTP response's
// protocol (http.Response.Proto): "h2" for HTTP/2, "h3" for HTTP/3, ""
// for HTTP/1.x, which the records' own syntax states. The values are
// those of the ALPN registry, as the WARC-Protocol field proposed for the
// next WARC version, and written by wget, warcprox and Browsertrix, uses
// them.
func ProtocolOf(proto string) string {
	switch {
	case strings.HasPrefix(proto, "HTTP/2"):
		return "h2"
	case strings.HasPrefix(proto, "HTTP/3"):
		return "h3"
	}
	return ""
}

// RequestBytes formats an HTTP request the way it goes over the wire in
// HTTP/1.1: request line (origin form), Host, the header fields (sorted),
// Content-Length for a body, blank line and body. An HTTP/2 request is
// archived in this form too, as WARC tools expect.
func RequestBytes(method, requestURI, host string, h http.Header, body []byte) []byte {
	var b bytes.Buffer
	b.Grow(256 + len(body))
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, requestURI, host)
	hh := h
	if len(body) > 0 && h.Get("Content-Length") == "" {
		hh = h.Clone() // nil for a nil h
		if hh == nil {
			hh = http.Header{}
		}
		hh.Set("Content-Length", strconv.Itoa(len(body)))
	}
	_ = hh.WriteSubset(&b, map[string]bool{"Host": true})
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// ResponseHeadBytes formats a response's status line and header fields as
// an Exchange's ResponseHead. Transfer-Encoding is left out: the payload is
// archived without it.
func ResponseHeadBytes(proto, status string, h http.Header) []byte {
	var b bytes.Buffer
	b.Grow(512)
	fmt.Fprintf(&b, "%s %s\r\n", proto, status)
	_ = h.WriteSubset(&b, map[string]bool{"Transfer-Encoding": true})
	return b.Bytes()
}
