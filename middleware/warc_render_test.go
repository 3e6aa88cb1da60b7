package middleware

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/persist/warc"
	"github.com/gocrawl/gocrawl/spider"
)

// The exchanges a browser made for a rendered page (the download handler
// adds them to the Capture) are archived each as a request and a response
// record, all with the page's WARC-Page-ID and each with its
// WARC-Resource-Type; an HTTP/2 one in HTTP/1.1 form with WARC-Protocol;
// an exchange whose URL is not absolute is left out, the others archived.
func TestWarcArchivesRenderedExchanges(t *testing.T) {
	dir := t.TempDir()
	c, logs := newCrawler(t, nil, map[string]any{"WARC_DIR": dir, "WARC_PREFIX": "t"})
	m, err := NewWarc(c, WarcOptions{})
	if err != nil {
		t.Fatal(err)
	}
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	browsed := []downloader.BrowserExchange{
		{Date: date, URL: "http://example.test/", Method: "GET", RequestHeader: http.Header{"Cookie": {"a=1"}},
			Proto: "HTTP/1.1", Status: "302 Found", StatusCode: 302, Header: http.Header{"Location": {"/page"}},
			IP: "192.0.2.1", ResourceType: "document"},
		{Date: date, URL: "http://example.test/page", Method: "GET", Proto: "HTTP/2.0", Status: "200 OK", StatusCode: 200,
			Header:  http.Header{"Content-Type": {"text/html"}, "X-Archive-Orig-Content-Encoding": {"gzip"}},
			Payload: []byte("<html>page</html>"), IP: "192.0.2.1", ResourceType: "document"},
		{Date: date, URL: "page.css", Method: "GET", Proto: "HTTP/1.1", Status: "200 OK", StatusCode: 200},
		{Date: date, URL: "http://example.test/a.css", Method: "GET", Proto: "HTTP/1.1", Status: "200 OK", StatusCode: 200,
			Header: http.Header{"Content-Type": {"text/css"}}, Payload: []byte("body {}"), ResourceType: "stylesheet",
			Truncated: "length"},
	}
	next := FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		downloader.CaptureOf(ctx).AddBrowser(browsed...)
		return &spider.Response{URL: req.URL, Status: 200, Request: req, Flags: []string{"rendered"}}, nil
	})
	req, err := spider.NewRequest("http://example.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WrapFetcher(next).Fetch(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "page.css") {
		t.Errorf("the exchange of a relative URL is not named in the log:\n%s", logs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	r, f, err := warc.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []*warc.Record
	for {
		rec, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 7 {
		t.Fatalf("%d records, want warcinfo and 3 request/response pairs", len(recs))
	}
	page := recs[1].Header.Get("WARC-Page-ID")
	if len(page) != 36 {
		t.Errorf("WARC-Page-ID %q, want a UUID", page)
	}
	want := []struct {
		typ, uri, kind, protocol, truncated, firstLine string
		payload                                        string
	}{
		{"request", "http://example.test/", "document", "", "", "GET / HTTP/1.1", ""},
		{"response", "http://example.test/", "document", "", "", "HTTP/1.1 302 Found", ""},
		{"request", "http://example.test/page", "document", "h2", "", "GET /page HTTP/1.1", ""},
		{"response", "http://example.test/page", "document", "h2", "", "HTTP/1.1 200 OK", "<html>page</html>"},
		{"request", "http://example.test/a.css", "stylesheet", "", "", "GET /a.css HTTP/1.1", ""},
		{"response", "http://example.test/a.css", "stylesheet", "", "length", "HTTP/1.1 200 OK", "body {}"},
	}
	for i, w := range want {
		rec := recs[i+1]
		h := rec.Header
		got := []string{rec.Type(), rec.TargetURI(), h.Get("WARC-Resource-Type"), h.Get("WARC-Protocol"), h.Get("WARC-Truncated")}
		if exp := []string{w.typ, w.uri, w.kind, w.protocol, w.truncated}; strings.Join(got, "|") != strings.Join(exp, "|") {
			t.Errorf("record %d: type, URI, resource type, protocol, truncated %q, want %q", i+1, got, exp)
		}
		if h.Get("WARC-Page-ID") != page {
			t.Errorf("record %d: WARC-Page-ID %q, want %q", i+1, h.Get("WARC-Page-ID"), page)
		}
		if line, _, _ := bytes.Cut(rec.Block, []byte("\r\n")); string(line) != w.firstLine {
			t.Errorf("record %d: first line %q, want %q", i+1, line, w.firstLine)
		}
		if w.typ == "response" {
			_, payload, _ := rec.HTTP()
			if string(payload) != w.payload || h.Get("WARC-Payload-Digest") != warc.Digest([]byte(w.payload)) {
				t.Errorf("record %d: payload %q digest %s, want %q", i+1, payload, h.Get("WARC-Payload-Digest"), w.payload)
			}
		}
	}
	if !bytes.Contains(recs[1].Block, []byte("Cookie: a=1\r\n")) || recs[1].Header.Get("WARC-IP-Address") != "192.0.2.1" {
		t.Errorf("the first request record lost its Cookie or its IP:\n%s\n%v", recs[1].Block, recs[1].Header)
	}
	st := c.Stats.Snapshot()
	if st["warc/rendered_exchanges"] != 3 || st["warc/exchanges"] != 3 || st["warc/truncated"] != 1 {
		t.Errorf("stats %v", st)
	}
}
