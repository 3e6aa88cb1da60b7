package warc

import (
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
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
	// Parsed, when set, is URL parsed (url.Parse(URL) gives the same
	// fields): the index key is made from it without parsing URL again.
	// Leave it nil when you only have the string.
	Parsed *url.URL
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
	b := make([]byte, 0, 64+len(method)+len(requestURI)+len(host)+headerSize(h)+len(body))
	b = append(append(append(append(b, method...), ' '), requestURI...), " HTTP/1.1\r\nHost: "...)
	b = append(append(b, host...), "\r\n"...)
	length := ""
	if len(body) > 0 && h.Get("Content-Length") == "" {
		length = strconv.Itoa(len(body))
	}
	b = appendHeader(b, h, "Host", length)
	return append(append(b, "\r\n"...), body...)
}

// ResponseHeadBytes formats a response's status line and header fields as
// an Exchange's ResponseHead. Transfer-Encoding is left out: the payload is
// archived without it.
func ResponseHeadBytes(proto, status string, h http.Header) []byte {
	b := make([]byte, 0, 4+len(proto)+len(status)+headerSize(h))
	b = append(append(append(append(b, proto...), ' '), status...), "\r\n"...)
	return appendHeader(b, h, "Transfer-Encoding", "")
}

// headerSize is about the length of h's fields once formatted.
func headerSize(h http.Header) int {
	n := 0
	for k, vv := range h {
		for _, v := range vv {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// appendHeader appends h's fields as http.Header.WriteSubset writes them
// (sorted by name, invalid names dropped, each value on one line and
// trimmed), but for the field named skip; a non-empty length replaces
// Content-Length's values. It spares the requests and responses of a
// crawl WriteSubset's map, sorter and writes.
func appendHeader(b []byte, h http.Header, skip, length string) []byte {
	var arr [32]string
	keys := arr[:0]
	for k := range h {
		if k != skip && (length == "" || k != "Content-Length") {
			keys = append(keys, k)
		}
	}
	if length != "" {
		keys = append(keys, "Content-Length")
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		vv := h[k]
		if length != "" && k == "Content-Length" {
			vv = []string{length}
		}
		for _, v := range vv {
			if strings.IndexByte(v, '\r') >= 0 || strings.IndexByte(v, '\n') >= 0 {
				v = newlineToSpace.Replace(v)
			}
			v = textproto.TrimString(v)
			b = append(append(append(append(b, k...), ": "...), v...), "\r\n"...)
		}
	}
	return b
}

var newlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")
