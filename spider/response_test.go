package spider

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func newResponse(t *testing.T, rawURL, contentType string, body []byte) *Response {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &Response{URL: u, Status: 200, Header: h, Body: body, Request: &Request{URL: u, Depth: 2}}
}

func TestResponseCharsets(t *testing.T) {
	// "日本語" in Shift_JIS.
	sjis := "\x93\xfa\x96\x7b\x8c\xea"
	for _, tc := range []struct {
		name, contentType, body, wantTitle string
	}{
		{"utf-8 header", "text/html; charset=utf-8", "<title>café</title>", "café"},
		{"iso-8859-1 header", "text/html; charset=ISO-8859-1", "<title>caf\xe9</title>", "café"},
		{"windows-1252 header", "text/html; charset=windows-1252", "<title>\x93smart\x94 \x80</title>", "“smart” €"},
		{"shift_jis header", "text/html; charset=Shift_JIS", "<title>" + sjis + "</title>", "日本語"},
		{"iso-8859-1 meta charset", "text/html", "<html><head><meta charset=\"iso-8859-1\"><title>na\xefve</title>", "naïve"},
		{"windows-1252 meta http-equiv", "text/html", "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"><title>\x93q\x94</title>", "“q”"},
		{"shift_jis meta", "text/html", `<meta charset="Shift_JIS"><title>` + sjis + `</title>`, "日本語"},
		{"header wins over meta", "text/html; charset=iso-8859-1", "<meta charset=\"utf-8\"><title>caf\xe9</title>", "café"},
		{"no declaration, valid utf-8", "text/html", "<title>żółw</title>", "żółw"},
		{"no declaration, legacy bytes", "text/html", "<title>caf\xe9</title>", "café"},
		{"utf-8 BOM", "text/html", "\xef\xbb\xbf<title>é</title>", "é"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newResponse(t, "http://example.com/", tc.contentType, []byte(tc.body))
			doc, err := r.Doc()
			if err != nil {
				t.Fatal(err)
			}
			if got := doc.Find("title").Text(); got != tc.wantTitle {
				t.Errorf("title = %q, want %q", got, tc.wantTitle)
			}
			text, err := r.Text()
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(text, "\ufeff") {
				t.Error("Text() kept the byte-order mark")
			}
			if !strings.Contains(text, tc.wantTitle) {
				t.Errorf("Text() = %q, want it to contain %q", text, tc.wantTitle)
			}
		})
	}
}

func TestResponseDocNotHTML(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	for _, tc := range []struct {
		name, contentType string
		body              []byte
	}{
		{"png", "image/png", png},
		{"png unlabelled", "", png},
		{"json", "application/json", []byte(`{"a": 1}`)},
		{"pdf", "application/pdf", []byte("%PDF-1.4\n")},
		{"octet-stream binary", "application/octet-stream", []byte{0, 1, 2, 3, 0xff}},
		{"empty", "", nil},
		{"garbage content type", "%%%;;;", []byte{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newResponse(t, "http://example.com/x", tc.contentType, tc.body)
			doc, err := r.Doc()
			if !errors.Is(err, ErrNotHTML) {
				t.Fatalf("Doc() error = %v, want ErrNotHTML", err)
			}
			if doc != nil {
				t.Error("Doc() returned a document with an error")
			}
			if !strings.Contains(err.Error(), "http://example.com/x") {
				t.Errorf("error %q does not name the URL", err)
			}
			if n := r.Find("a").Length(); n != 0 {
				t.Errorf("Find on non-HTML found %d nodes", n)
			}
			// Follow still works against the response URL.
			if req, err := r.NewRequest("y", nil); err != nil || req.URL.String() != "http://example.com/y" {
				t.Errorf("Follow on non-HTML = %v, %v", req, err)
			}
		})
	}
}

func TestResponseXMLAndMislabelledHTML(t *testing.T) {
	xml := `<?xml version="1.0" encoding="UTF-8"?><urlset><url><loc>http://example.com/a</loc></url><url><loc>http://example.com/b</loc></url></urlset>`
	for _, ct := range []string{"application/xml", "text/xml; charset=utf-8", "application/rss+xml"} {
		r := newResponse(t, "http://example.com/sitemap.xml", ct, []byte(xml))
		doc, err := r.Doc()
		if err != nil {
			t.Fatalf("%s: %v", ct, err)
		}
		if n := doc.Find("loc").Length(); n != 2 {
			t.Errorf("%s: found %d <loc>, want 2", ct, n)
		}
	}
	r := newResponse(t, "http://example.com/", "text/plain", []byte("<!DOCTYPE html><html><title>t</title></html>"))
	if _, err := r.Doc(); err != nil {
		t.Errorf("HTML served as text/plain: %v", err)
	}
	r = newResponse(t, "http://example.com/", "text/plain", []byte("just text"))
	if _, err := r.Doc(); !errors.Is(err, ErrNotHTML) {
		t.Errorf("plain text: err = %v, want ErrNotHTML", err)
	}
}

func TestResponseJSON(t *testing.T) {
	r := newResponse(t, "http://example.com/api", "application/json", []byte(`{"n": 3}`))
	var v struct{ N int }
	if err := r.JSON(&v); err != nil || v.N != 3 {
		t.Errorf("JSON = %v, %+v", err, v)
	}
	r = newResponse(t, "http://example.com/api", "application/json", []byte(`{`))
	if err := r.JSON(&v); err == nil || !strings.Contains(err.Error(), "http://example.com/api") {
		t.Errorf("bad JSON error = %v, want one naming the URL", err)
	}
}

func TestURLJoinAndFollow(t *testing.T) {
	page := `<html><head>%s</head><body></body></html>`
	for _, tc := range []struct {
		name, head, pageURL, ref, want string
		wantErr                        bool
	}{
		{"relative", "", "http://example.com/a/b.html", "c.html", "http://example.com/a/c.html", false},
		{"parent", "", "http://example.com/a/b/c.html", "../d.html", "http://example.com/a/d.html", false},
		{"root-relative", "", "http://example.com/a/b.html", "/x?q=1", "http://example.com/x?q=1", false},
		{"absolute", "", "http://example.com/a", "https://other.org/p", "https://other.org/p", false},
		{"scheme-relative", "", "https://example.com/a", "//cdn.example.com/x", "https://cdn.example.com/x", false},
		{"fragment dropped", "", "http://example.com/a", "b#section", "http://example.com/b", false},
		{"fragment only", "", "http://example.com/a?x=1", "#top", "http://example.com/a?x=1", false},
		{"whitespace trimmed", "", "http://example.com/a/", "  b  ", "http://example.com/a/b", false},
		{"base href absolute", `<base href="http://static.example.com/dir/">`, "http://example.com/a/b", "c", "http://static.example.com/dir/c", false},
		{"base href relative", `<base href="/root/">`, "http://example.com/a/b", "c", "http://example.com/root/c", false},
		{"mailto rejected", "", "http://example.com/", "mailto:a@example.com", "", true},
		{"javascript rejected", "", "http://example.com/", "javascript:void(0)", "", true},
		{"tel rejected", "", "http://example.com/", "tel:+123", "", true},
		{"unparsable", "", "http://example.com/", "http://[::1", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newResponse(t, tc.pageURL, "text/html", []byte(strings.Replace(page, "%s", tc.head, 1)))
			req, err := r.NewRequest(tc.ref, nil)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidURL) {
					t.Fatalf("Follow(%q) error = %v, want ErrInvalidURL", tc.ref, err)
				}
				if !strings.Contains(err.Error(), strings.TrimSpace(tc.ref)) {
					t.Errorf("error %q does not name the link", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := req.URL.String(); got != tc.want {
				t.Errorf("Follow(%q) = %s, want %s", tc.ref, got, tc.want)
			}
			if req.Depth != 3 {
				t.Errorf("depth = %d, want the response request's depth + 1 = 3", req.Depth)
			}
			if tc.name != "unparsable" {
				if j, err := r.URLJoin(tc.ref); err != nil || j != tc.want {
					t.Errorf("URLJoin(%q) = %q, %v", tc.ref, j, err)
				}
			}
		})
	}
}

func TestFollowAll(t *testing.T) {
	r := newResponse(t, "http://example.com/dir/", "text/html", []byte(`<html><body>
		<a href="a">A</a><a href="/b#x">B</a><a href="mailto:x@y">mail</a><a>no href</a>
		<img src="i.png"></body></html>`))
	doc, err := r.Doc()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(Hrefs(doc.Find("a, img")), " "), "a /b#x mailto:x@y i.png"; got != want {
		t.Errorf("Hrefs = %q, want %q (href, else src; elements with neither skipped)", got, want)
	}
	if Hrefs(nil) != nil {
		t.Error("Hrefs(nil) is not empty")
	}
	var out Recorder
	out.FollowAll(r, doc.Find("a, img"), nil)
	var got []string
	for _, q := range out.Requests {
		got = append(got, q.URL.String())
	}
	want := "http://example.com/dir/a http://example.com/b http://example.com/dir/i.png"
	if strings.Join(got, " ") != want {
		t.Errorf("FollowAll(selection) = %v, want %s", got, want)
	}
	if len(out.Errors) != 1 || !errors.Is(out.Errors[0], ErrInvalidURL) {
		t.Errorf("errors = %v, want one ErrInvalidURL for mailto:", out.Errors)
	}
}

func TestRecorderRecordsFollowErrors(t *testing.T) {
	r := newResponse(t, "http://example.com/", "text/html", []byte("<p>"))
	var c Recorder
	c.Follow(r, "ok", nil)
	c.Follow(r, "mailto:x@y", nil)
	c.Follow(r, "a", nil)
	c.Follow(r, "javascript:x", nil)
	c.Item(map[string]any{"k": 1})
	if len(c.Requests) != 2 || len(c.Errors) != 2 || len(c.Items) != 1 {
		t.Errorf("recorder: %d requests, %d errors, %d items; want 2, 2, 1", len(c.Requests), len(c.Errors), len(c.Items))
	}
}
