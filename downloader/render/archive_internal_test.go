package render

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
)

// The network events of a page make one exchange per hop: the redirect's
// response comes with the next hop's request, the raw header fields and
// status line of the ExtraInfo events replace the browser's own view of
// them, a decoded body's Content-Encoding and Content-Length are renamed,
// a load that fails after its head is flagged, requests without a response
// or taken from the browser's cache are left out, and so is one still
// loading when the page is taken (counted).
func TestArchiveRunEvents(t *testing.T) {
	a := newArchiveRun(&tab{frame: "main"}, 0)
	get := func(u string) *network.Request {
		return &network.Request{URL: u, Method: "GET", Headers: network.Headers{"User-Agent": "ua"}}
	}
	events := []any{
		&network.EventRequestWillBeSent{RequestID: "1", Request: get("http://h.test/"), Type: network.ResourceTypeDocument,
			FrameID: "main", WallTime: 1767323045.5},
		&network.EventRequestWillBeSentExtraInfo{RequestID: "1", Headers: network.Headers{"User-Agent": "ua", "Cookie": "a=1", "Host": "h.test"}},
		&network.EventResponseReceivedExtraInfo{RequestID: "1", StatusCode: 301,
			Headers: network.Headers{"Location": "/p"}, HeadersText: "HTTP/1.1 301 Moved For Good\r\nLocation: /p\r\n\r\n"},
		&network.EventRequestWillBeSent{RequestID: "1", Request: get("http://h.test/p"), Type: network.ResourceTypeDocument,
			FrameID: "main", RedirectResponse: &network.Response{Status: 301, StatusText: "Moved Permanently",
				Headers: network.Headers{"Location": "/p"}, Protocol: "http/1.1", RemoteIPAddress: "[::1]"}},
		&network.EventResponseReceived{RequestID: "1", Response: &network.Response{Status: 200, Protocol: "h2",
			Headers: network.Headers{"Content-Encoding": "br", "Content-Length": "10", "Set-Cookie": "a=1\nb=2", ":status": "200"}}},
		&network.EventLoadingFailed{RequestID: "1"},
		// A frame's document, no response: left out.
		&network.EventRequestWillBeSent{RequestID: "2", Request: get("http://h.test/frame"), Type: network.ResourceTypeDocument, FrameID: "other"},
		// From the browser's cache: left out.
		&network.EventRequestWillBeSent{RequestID: "3", Request: get("http://h.test/a.css"), Type: network.ResourceTypeStylesheet},
		&network.EventResponseReceived{RequestID: "3", Response: &network.Response{Status: 200, FromDiskCache: true}},
		&network.EventLoadingFinished{RequestID: "3"},
		// data: URLs never reach the network.
		&network.EventRequestWillBeSent{RequestID: "4", Request: get("data:text/plain,x"), Type: network.ResourceTypeImage},
		// Still loading.
		&network.EventRequestWillBeSent{RequestID: "5", Request: get("http://h.test/slow"), Type: network.ResourceTypeXHR},
		&network.EventResponseReceived{RequestID: "5", Response: &network.Response{Status: 200}},
	}
	for _, ev := range events {
		a.event(ev)
	}
	out, unfinished := a.finish(context.Background())
	if unfinished != 1 {
		t.Errorf("unfinished = %d, want 1 (/slow)", unfinished)
	}
	if len(out) != 2 {
		t.Fatalf("%d exchanges %+v, want the two hops of the document", len(out), out)
	}
	hop, doc := out[0], out[1]
	if hop.URL != "http://h.test/" || hop.Proto != "HTTP/1.1" || hop.Status != "301 Moved For Good" || hop.IP != "::1" ||
		hop.ResourceType != "document" || hop.RequestHeader.Get("Cookie") != "a=1" || hop.Date.Unix() != 1767323045 {
		t.Errorf("the redirect hop: %+v", hop)
	}
	if doc.URL != "http://h.test/p" || doc.Proto != "HTTP/2.0" || doc.Status != "200 OK" || doc.Truncated != "disconnect" {
		t.Errorf("the document: %+v", doc)
	}
	want := http.Header{"X-Archive-Orig-Content-Encoding": {"br"}, "X-Archive-Orig-Content-Length": {"10"}, "Set-Cookie": {"a=1", "b=2"}}
	if !equalHeader(doc.Header, want) {
		t.Errorf("the document's header fields %v, want %v", doc.Header, want)
	}
	// Late events are ignored.
	a.event(&network.EventRequestWillBeSent{RequestID: "6", Request: get("http://h.test/late")})
	if len(a.hops) != 5 {
		t.Errorf("%d hops after the end, want 5", len(a.hops))
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b[k], "\n") {
			return false
		}
	}
	return true
}

func TestProtoOf(t *testing.T) {
	for in, want := range map[string]string{"http/1.0": "HTTP/1.0", "http/1.1": "HTTP/1.1", "h2": "HTTP/2.0",
		"h3": "HTTP/3.0", "http/2+quic/46": "HTTP/2.0", "": "HTTP/1.1", "blob": "HTTP/1.1"} {
		if got := protoOf(in); got != want {
			t.Errorf("protoOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// A text body comes from the browser as UTF-8: it is archived in the
// charset the response was decoded from.
func TestTextBytes(t *testing.T) {
	for _, c := range []struct{ in, charset, want string }{
		{"café", "", "café"},
		{"café", "UTF-8", "café"},
		{"café", "iso-8859-1", "caf\xe9"},
		{"café", "windows-1252", "caf\xe9"},
		{"日本", "shift_jis", "\x93\xfa\x96{"},
		{"café", "no-such-charset", "café"},
	} {
		if got := string(textBytes([]byte(c.in), c.charset)); got != c.want {
			t.Errorf("textBytes(%q, %q) = %q, want %q", c.in, c.charset, got, c.want)
		}
	}
}

func TestArchiveBuffers(t *testing.T) {
	for _, c := range []struct{ limit, total, resource int64 }{
		{0, 512 << 20, 256 << 20},
		{1 << 30, 512 << 20, 256 << 20},
		{1 << 20, 100 << 20, 1<<20 + 1},
		{200 << 20, 400<<20 + 2, 200<<20 + 1},
	} {
		total, resource := archiveBuffers(c.limit)
		if total != c.total || resource != c.resource {
			t.Errorf("archiveBuffers(%d) = %d, %d; want %d, %d", c.limit, total, resource, c.total, c.resource)
		}
	}
}
