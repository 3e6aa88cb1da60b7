package render_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/base32"
	"image"
	"image/png"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/crawltest"
	"github.com/gocrawl/gocrawl/devtools/warciotest"
	"github.com/gocrawl/gocrawl/persist/warc"
	"github.com/gocrawl/gocrawl/persist/warc/warctest"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

// archiveSite serves a page reached through a redirect, with a stylesheet
// (sent gzip-compressed), a script, a script in ISO-8859-1, an image, an
// image larger than the crawl's DOWNLOAD_MAXSIZE and one XHR, whose answer
// the page shows in #done (a POST). It records every request it answered and the
// body it sent for each path (before compression).
type archiveSite struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
	sent map[string][]byte
}

const archiveMaxSize = 64 << 10

func newArchiveSite(t *testing.T) *archiveSite {
	s := &archiveSite{hits: map[string]int{}, sent: map[string][]byte{}}
	img, big := pngOf(t, 8), pngOf(t, 160) // 160x160 pixels of noise: over 64 KiB
	if len(big) <= archiveMaxSize {
		t.Fatalf("the big image has %d bytes, want more than %d", len(big), archiveMaxSize)
	}
	bodies := map[string]struct {
		typ  string
		body []byte
	}{
		"/page": {"text/html; charset=utf-8", []byte(`<!DOCTYPE html><html><head><title>été</title>
<link rel="stylesheet" href="/style.css"><script src="/app.js"></script><script src="/latin1.js"></script></head>
<body><img src="/img.png"><img src="/big.png"><img src="/broken.png"><p id="out"></p>
<script>const x = new XMLHttpRequest(); x.open("POST", "/data.json");
x.onload = () => { const d = document.createElement("div"); d.id = "done"; d.textContent = x.responseText; document.body.appendChild(d); };
x.send('{"q":1}');</script></body></html>`)},
		"/style.css":  {"text/css", []byte(strings.Repeat("body { color: #123456; }\n", 40))},
		"/app.js":     {"application/javascript", []byte(`document.title += " ✓";`)},
		"/latin1.js":  {"application/javascript; charset=iso-8859-1", []byte("var s = \"caf\xe9\";")},
		"/img.png":    {"image/png", img},
		"/big.png":    {"image/png", big},
		"/broken.png": {"image/png", []byte("not an image")},
		"/data.json":  {"application/json", []byte(`{"ok":true}`)},
		"/robots.txt": {"text/plain", []byte("User-agent: *\nAllow: /\n")},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		if r.URL.Path == "/" {
			http.Redirect(w, r, "/page", http.StatusFound)
			return
		}
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.sent[r.URL.Path] = b.body
		s.mu.Unlock()
		w.Header().Set("Content-Type", b.typ)
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/style.css" {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			_, _ = zw.Write(b.body)
			_ = zw.Close()
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", itoa(z.Len()))
			_, _ = w.Write(z.Bytes())
			return
		}
		_, _ = w.Write(b.body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// pngOf returns a square PNG image of side n, of noise (so that it does
// not compress).
func pngOf(t *testing.T, n int) []byte {
	rnd := rand.New(rand.NewPCG(1, uint64(n)))
	m := image.NewNRGBA(image.Rect(0, 0, n, n))
	for i := range m.Pix {
		m.Pix[i] = byte(rnd.Uint32())
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A rendered page is archived as the browser received it: the redirect
// hop, the document and each subresource (stylesheet, scripts, images, the
// XHR) as a request and a response record naming each other, all with the
// page's WARC-Page-ID; bodies as the server sent them (decoded from gzip,
// the header fields that described the encoding renamed), the ISO-8859-1
// script in its own charset, the image over DOWNLOAD_MAXSIZE cut and
// flagged, the XHR's posted body in its request record; every payload
// digest right, as read by warcio.js. A replay of the archive answers the
// page with its document as the server sent it, sending nothing.
func TestArchiveRenderedPage(t *testing.T) {
	site := newArchiveSite(t)
	dir := t.TempDir()
	sp := follow.New()
	if err := sp.SetArgs(map[string]string{"start_urls": site.srv.URL + "/", "render": "true"}); err != nil {
		t.Fatal(err)
	}
	res := crawltest.Run(t, sp, crawltest.Options{Settings: map[string]any{
		"ROBOTSTXT_OBEY": false, "RETRY_ENABLED": false, "LOGSTATS_INTERVAL": 0, "RENDER_TIMEOUT": 20,
		"RENDER_WAIT_SELECTOR": "#done", "RENDER_BLOCK_RESOURCE_TYPES": []any{}, "WARC_DIR": dir,
		"DOWNLOAD_MAXSIZE": archiveMaxSize,
	}, Timeout: time.Minute})
	if len(res.Items) != 1 {
		t.Fatalf("%d items, want the rendered page; stats %v", len(res.Items), res.Stats)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("WARC files %v, want one", files)
	}
	recs := warciotest.Read(t, files[0])
	if len(recs) == 0 || recs[0].Type != "warcinfo" {
		t.Fatalf("%d records, the first %+v; want a warcinfo first", len(recs), recs)
	}
	byID := map[string]warciotest.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	responses := map[string][]warciotest.Record{}
	page := ""
	for _, r := range recs[1:] {
		if page == "" {
			page = r.Header("WARC-Page-ID")
		}
		if got := r.Header("WARC-Page-ID"); got == "" || got != page {
			t.Errorf("%s %s: WARC-Page-ID %q, want the page's %q on every record", r.Type, r.URI, got, page)
		}
		if o, ok := byID[r.Header("WARC-Concurrent-To")]; !ok || o.URI != r.URI || o.Header("WARC-Concurrent-To") != r.ID {
			t.Errorf("%s %s: WARC-Concurrent-To %q does not name its pair", r.Type, r.URI, r.Header("WARC-Concurrent-To"))
		}
		if r.Header("WARC-IP-Address") != "127.0.0.1" {
			t.Errorf("%s %s: WARC-IP-Address %q", r.Type, r.URI, r.Header("WARC-IP-Address"))
		}
		switch r.Type {
		case "request":
			if r.HTTPHeader("User-Agent") == "" {
				t.Errorf("request %s: no User-Agent in %v", r.URI, r.HTTPHeaders)
			}
			if strings.HasSuffix(r.URI, "/data.json") && string(r.Payload) != `{"q":1}` {
				t.Errorf("the XHR's request record holds the body %q, want the one posted", r.Payload)
			}
		case "response":
			sum := sha1.Sum(r.Payload)
			if want := "sha1:" + base32.StdEncoding.EncodeToString(sum[:]); r.Header("WARC-Payload-Digest") != want {
				t.Errorf("%s: WARC-Payload-Digest %s, the payload warcio.js reads has %s", r.URI, r.Header("WARC-Payload-Digest"), want)
			}
			path := strings.TrimPrefix(r.URI, site.srv.URL)
			responses[path] = append(responses[path], r)
		default:
			t.Errorf("unexpected %s record for %s", r.Type, r.URI)
		}
	}

	// The index beside the file lists every response.
	idx, err := warc.ReadIndex(warc.IndexPath(files[0]))
	if err != nil {
		t.Fatal(err)
	}
	indexed := map[string]int{}
	for _, e := range idx {
		indexed[strings.TrimPrefix(e.URL, site.srv.URL)]++
	}
	for path, rs := range responses {
		if indexed[path] != len(rs) {
			t.Errorf("%s: %d index entries, %d responses", path, indexed[path], len(rs))
		}
	}

	// Every request the server answered is archived, once.
	site.mu.Lock()
	defer site.mu.Unlock()
	for path, n := range site.hits {
		if path == "/favicon.ico" {
			continue // asked for by the browser itself, maybe after the page was taken
		}
		if len(responses[path]) != n {
			t.Errorf("%s: %d response records, the server answered %d requests", path, len(responses[path]), n)
		}
	}
	for path := range responses {
		if site.hits[path] == 0 {
			t.Errorf("%s archived, never requested", path)
		}
	}
	kinds := map[string]string{"/": "document", "/page": "document", "/style.css": "stylesheet", "/app.js": "script",
		"/latin1.js": "script", "/img.png": "image", "/big.png": "image", "/data.json": "xhr", "/broken.png": "image"}
	for path, kind := range kinds {
		rs := responses[path]
		if len(rs) != 1 {
			t.Errorf("%s: %d response records, want 1", path, len(rs))
			continue
		}
		r := rs[0]
		if got := r.Header("WARC-Resource-Type"); got != kind {
			t.Errorf("%s: WARC-Resource-Type %q, want %q", path, got, kind)
		}
		want := site.sent[path]
		switch path {
		case "/":
			if r.Status != http.StatusFound || r.HTTPHeader("Location") != "/page" {
				t.Errorf("the redirect hop: status %d, Location %q", r.Status, r.HTTPHeader("Location"))
			}
			continue
		case "/big.png":
			if r.Header("WARC-Truncated") != "length" {
				t.Errorf("%s: WARC-Truncated %q, want length (over DOWNLOAD_MAXSIZE)", path, r.Header("WARC-Truncated"))
			}
			want = want[:archiveMaxSize]
		case "/broken.png":
			// The browser keeps no body of an image it cannot decode: the
			// exchange is archived without it, flagged.
			if r.Header("WARC-Truncated") != "unspecified" || len(r.Payload) != 0 {
				t.Errorf("%s: WARC-Truncated %q, %d bytes; want unspecified, no body", path, r.Header("WARC-Truncated"), len(r.Payload))
			}
			continue
		case "/style.css":
			if r.HTTPHeader("Content-Encoding") != "" || r.HTTPHeader("X-Archive-Orig-Content-Encoding") != "gzip" ||
				r.HTTPHeader("Content-Length") != "" || r.HTTPHeader("X-Archive-Orig-Content-Length") == "" {
				t.Errorf("%s: the decoded body's header fields %v, want Content-Encoding and Content-Length renamed X-Archive-Orig-", path, r.HTTPHeaders)
			}
		}
		if r.Status != http.StatusOK {
			t.Errorf("%s: status %d", path, r.Status)
		}
		if r.Header("WARC-Truncated") != "" && path != "/big.png" {
			t.Errorf("%s: WARC-Truncated %q", path, r.Header("WARC-Truncated"))
		}
		if !bytes.Equal(r.Payload, want) {
			t.Errorf("%s: archived body (%d bytes) %.80q, the server sent (%d bytes) %.80q", path, len(r.Payload), r.Payload, len(want), want)
		}
	}
	if n := res.Stats["warc/rendered_exchanges"]; int(n) != len(recs[1:])/2 {
		t.Errorf("warc/rendered_exchanges = %v, want %d", n, len(recs[1:])/2)
	}
	if title := res.Items[0].(follow.Page).Title; title != "été ✓" {
		t.Errorf("rendered title %q, want the one app.js made", title)
	}

	// A replay answers the page with its document as the server sent it
	// (through its redirect), without running the browser or sending
	// anything.
	hits := maps.Clone(site.hits)
	site.mu.Unlock()
	sp = follow.New()
	if err := sp.SetArgs(map[string]string{"start_urls": site.srv.URL + "/", "render": "true"}); err != nil {
		t.Fatal(err)
	}
	rep := warctest.Replay(t, sp, dir, map[string]any{"ROBOTSTXT_OBEY": false})
	site.mu.Lock()
	if len(rep.Items) != 1 || rep.Items[0].(follow.Page).Title != "été" || !strings.HasSuffix(rep.Items[0].(follow.Page).URL, "/page") {
		t.Errorf("replayed items %+v, want /page titled as the server sent it", rep.Items)
	}
	if !maps.Equal(hits, site.hits) {
		t.Errorf("the replay sent requests: the server's counts went from %v to %v", hits, site.hits)
	}
}

// Over HTTP/2 (TLS, the browser told to accept the test's certificate),
// a rendered page's exchanges are archived in HTTP/1.1 form, marked
// WARC-Protocol: h2, without HTTP/2's pseudo header fields.
func TestArchiveRenderedPageHTTP2(t *testing.T) {
	css := []byte("p { margin: 0; }")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Path == "/s.css" {
			w.Header().Set("Content-Type", "text/css")
			_, _ = w.Write(css)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<html><head><link rel="stylesheet" href="/s.css"><title>` + r.Proto + `</title></head><body>h2</body></html>`))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	sp := follow.New()
	if err := sp.SetArgs(map[string]string{"start_urls": srv.URL + "/", "render": "true"}); err != nil {
		t.Fatal(err)
	}
	res := crawltest.Run(t, sp, crawltest.Options{Settings: map[string]any{
		"ROBOTSTXT_OBEY": false, "RETRY_ENABLED": false, "LOGSTATS_INTERVAL": 0, "RENDER_TIMEOUT": 20, "WARC_DIR": dir,
		"RENDER_BROWSER_ARGS": []any{"--ignore-certificate-errors"},
	}, Timeout: time.Minute})
	if len(res.Items) != 1 || res.Items[0].(follow.Page).Title != "HTTP/2.0" {
		t.Fatalf("items %+v, want the page served over HTTP/2; stats %v", res.Items, res.Stats)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("WARC files %v, want one", files)
	}
	seen := map[string]bool{}
	for _, r := range warciotest.Read(t, files[0])[1:] {
		path := strings.TrimPrefix(r.URI, srv.URL)
		seen[r.Type+" "+path] = true
		if r.Header("WARC-Protocol") != "h2" {
			t.Errorf("%s %s: WARC-Protocol %q, want h2", r.Type, path, r.Header("WARC-Protocol"))
		}
		for k := range r.HTTPHeaders {
			if strings.HasPrefix(k, ":") {
				t.Errorf("%s %s: pseudo header field %q archived", r.Type, path, k)
			}
		}
		if r.Type == "response" && (r.Status != http.StatusOK || (path == "/s.css" && !bytes.Equal(r.Payload, css))) {
			t.Errorf("%s: status %d, body %q", path, r.Status, r.Payload)
		}
	}
	for _, want := range []string{"request /", "response /", "request /s.css", "response /s.css"} {
		if !seen[want] {
			t.Errorf("no %s record; have %v", want, seen)
		}
	}
}
