package warc

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"testing"
)

func TestRequestBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		body string
		want string
	}{
		{"no header, no body", nil, "", "GET /p HTTP/1.1\r\nHost: a.test\r\n\r\n"},
		{"no header, a body", nil, "x=1", "GET /p HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nx=1"},
		{"header kept, length added", http.Header{"Accept": {"*/*"}}, "ab", "GET /p HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nContent-Length: 2\r\n\r\nab"},
		{"Host field not repeated", http.Header{"Host": {"b.test"}}, "", "GET /p HTTP/1.1\r\nHost: a.test\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(RequestBytes("GET", "/p", "a.test", tc.h, []byte(tc.body))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// writeSubsetRequest and writeSubsetHead are RequestBytes and
// ResponseHeadBytes written with fmt and http.Header.WriteSubset: what
// the hand-written ones must write, byte for byte.
func writeSubsetRequest(method, requestURI, host string, h http.Header, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, requestURI, host)
	hh := h
	if len(body) > 0 && h.Get("Content-Length") == "" {
		hh = h.Clone()
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

func writeSubsetHead(proto, status string, h http.Header) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\r\n", proto, status)
	_ = h.WriteSubset(&b, map[string]bool{"Transfer-Encoding": true})
	return b.Bytes()
}

// TestHeaderBytesAsWriteSubset: the request and response heads are those
// http.Header.WriteSubset writes, for odd header fields too.
func TestHeaderBytesAsWriteSubset(t *testing.T) {
	many := http.Header{}
	for i := range 40 { // more fields than appendHeader's array holds
		many.Add(fmt.Sprintf("X-Field-%02d", 40-i), strconv.Itoa(i))
	}
	for _, tc := range []struct {
		name string
		h    http.Header
		body string
	}{
		{"nil", nil, ""},
		{"nil, a body", nil, "x=1"},
		{"common", http.Header{"User-Agent": {"gocrawl"}, "Accept": {"*/*"}, "Accept-Encoding": {"gzip, br"}, "Cookie": {"a=1"}}, ""},
		{"several values", http.Header{"Set-Cookie": {"a=1", "b=2"}, "Vary": {"Accept"}}, ""},
		{"CR and LF in values, spaces around", http.Header{"X-A": {" one\r\ntwo ", "\tthree\n"}}, ""},
		{"invalid field names", http.Header{"Bad Name": {"1"}, "": {"2"}, "Ok": {"3"}, "Bad:colon": {"4"}}, ""},
		{"non-canonical names", http.Header{"x-lower": {"1"}, "host": {"h"}, "transfer-encoding": {"chunked"}}, ""},
		{"Host and Transfer-Encoding", http.Header{"Host": {"other"}, "Transfer-Encoding": {"chunked"}, "Content-Type": {"text/html"}}, "b"},
		{"Content-Length given", http.Header{"Content-Length": {"5"}}, "abcde"},
		{"Content-Length empty", http.Header{"Content-Length": {""}}, "abc"},
		{"content-length in lower case", http.Header{"content-length": {"3"}}, "abc"},
		{"no values", http.Header{"X-Empty": {}, "X-Full": {"1"}}, "zz"},
		{"many fields", many, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			got, want := RequestBytes("POST", "/p?q=1", "a.test:8080", tc.h, body), writeSubsetRequest("POST", "/p?q=1", "a.test:8080", tc.h, body)
			if !bytes.Equal(got, want) {
				t.Errorf("request:\n got %q\nwant %q", got, want)
			}
			got, want = ResponseHeadBytes("HTTP/1.1", "200 OK", tc.h), writeSubsetHead("HTTP/1.1", "200 OK", tc.h)
			if !bytes.Equal(got, want) {
				t.Errorf("response head:\n got %q\nwant %q", got, want)
			}
		})
	}
}
