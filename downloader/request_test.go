package downloader

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// newHTTPRequest builds what http.NewRequestWithContext builds from the
// URL's string, without the string: the same URL, host, request line,
// method and body.
func TestNewHTTPRequestMatchesParsingTheString(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		body        []byte
	}{
		{"GET", "http://example.com/page/1", nil},
		{"", "http://example.com/a?b=c&d=e#frag", nil},
		{"HEAD", "http://user:pa%20ss@example.com:8080/x", nil},
		{"GET", "http://example.com:/empty-port", nil},
		{"GET", "http://[::1]:/v6-empty-port", nil},
		{"GET", "http://[::1]:8080/v6", nil},
		{"GET", "http://example.com/a%2Fb/c%20d?q=%41", nil},
		{"GET", "http://xn--bcher-kva.example/ü?ä=ö", nil},
		{"POST", "http://example.com/form", []byte("a=1&b=2")},
		{"PUT", "http://example.com/empty-body", []byte{}},
		{"get", "http://example.com/lower-case-method", nil},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		req := &spider.Request{URL: u, Method: tc.method, Body: tc.body}
		var body, body2 io.Reader
		if len(tc.body) > 0 {
			body, body2 = bytes.NewReader(tc.body), bytes.NewReader(tc.body)
		}
		got, err := newHTTPRequest(context.Background(), req, body)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		want, err := http.NewRequestWithContext(context.Background(), req.EffectiveMethod(), req.URL.String(), body2)
		if err != nil {
			t.Fatalf("%s: NewRequest: %v", tc.url, err)
		}
		if got.URL.String() != want.URL.String() || got.Host != want.Host || got.URL.RequestURI() != want.URL.RequestURI() ||
			got.Method != want.Method || got.ContentLength != want.ContentLength || (got.GetBody == nil) != (want.GetBody == nil) {
			t.Errorf("%s:\n got %s %q host %q uri %q len %d\nwant %s %q host %q uri %q len %d", tc.url,
				got.Method, got.URL, got.Host, got.URL.RequestURI(), got.ContentLength,
				want.Method, want.URL, want.Host, want.URL.RequestURI(), want.ContentLength)
		}
		if got.URL == req.URL {
			t.Errorf("%s: the request shares the spider request's URL", tc.url)
		}
		if req.URL.String() != u.String() {
			t.Errorf("%s: the spider request's URL changed to %s", tc.url, req.URL)
		}
	}
	// A URL built by hand, not parsed: the request's scheme is what a parse
	// of its string gives (lower case), and the spider's URL is left alone.
	hand := &url.URL{Scheme: "HTTP", Host: "example.com:", Path: "/built"}
	if got, err := newHTTPRequest(context.Background(), &spider.Request{URL: hand}, nil); err != nil || got.URL.Scheme != "http" || got.Host != "example.com" || hand.Scheme != "HTTP" {
		t.Errorf("hand-built URL: %v %v (host %q), spider URL scheme now %q", got.URL, err, got.Host, hand.Scheme)
	}
	if _, err := newHTTPRequest(context.Background(), &spider.Request{URL: &url.URL{Scheme: "http", Host: "a"}, Method: "BAD METHOD"}, nil); err == nil {
		t.Error("an invalid method was accepted")
	}
}
