package middleware

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// A Referer in DEFAULT_REQUEST_HEADERS (or USER_AGENT's kind of default)
// fills in only a request without one: the Referer middleware's field
// counts as the request's own header, as the header it replaced did.
func TestSetMissingKeepsRefererField(t *testing.T) {
	u, _ := url.Parse("https://example.com/b")
	req := &spider.Request{URL: u, Referer: "https://example.com/a"}
	setMissing(req, http.Header{"Referer": {"https://default.test/"}, "Accept": {"text/html"}})
	if got := req.RefererHeader(); got != "https://example.com/a" {
		t.Fatalf("Referer sent = %q, want the page's (the field)", got)
	}
	if req.Header.Get("Accept") != "text/html" {
		t.Fatal("the other default headers were not filled in")
	}
	bare := &spider.Request{URL: u}
	setMissing(bare, http.Header{"Referer": {"https://default.test/"}})
	if got := bare.RefererHeader(); got != "https://default.test/" {
		t.Fatalf("Referer of a request without one = %q, want the default", got)
	}
}
