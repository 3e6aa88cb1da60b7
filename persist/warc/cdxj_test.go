package warc

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// jsonLine is how a CDXJ line is written with encoding/json: what Line
// must write, byte for byte.
func jsonLine(e Entry) string {
	j := entryJSON{URL: e.URL, Method: e.Method, ReqBody: e.RequestBody, MIME: e.MIME, Digest: e.Digest,
		Length: strconv.FormatInt(e.Length, 10), Offset: strconv.FormatInt(e.Offset, 10), Filename: e.File}
	if e.Type == TypeRevisit {
		j.MIME = "warc/revisit"
	}
	if e.Status > 0 {
		j.Status = strconv.Itoa(e.Status)
	}
	b, _ := json.Marshal(j)
	return e.SURT + " " + e.Time.UTC().Format(TimestampFormat) + " " + string(b)
}

// TestLineAsJSON: Line writes what encoding/json writes, escapes
// included, and ParseLine reads it back.
func TestLineAsJSON(t *testing.T) {
	base := Entry{SURT: "com,example)/", Time: t0, URL: "https://example.com/", Type: TypeResponse, Status: 200,
		MIME: "text/html", Digest: "sha1:ABC", Offset: 1234, Length: 567, File: "x-00000.warc.gz"}
	for _, tc := range []struct {
		name string
		edit func(*Entry)
	}{
		{"plain", func(*Entry) {}},
		{"query with HTML characters", func(e *Entry) { e.URL = `https://example.com/?a=1&b=<2>&c="3"\` }},
		{"control characters", func(e *Entry) { e.URL = "https://example.com/\x01\t\n\r\x7f" }},
		{"UTF-8 and invalid bytes", func(e *Entry) { e.URL = "https://example.com/é\u2028\u2029\xff" }},
		{"revisit", func(e *Entry) { e.Type, e.MIME = TypeRevisit, "" }},
		{"POST", func(e *Entry) { e.Method, e.RequestBody = "POST", "sha1:BODY" }},
		{"no status, mime or digest", func(e *Entry) { e.Status, e.MIME, e.Digest = 0, "", "" }},
		{"time not in UTC", func(e *Entry) { e.Time = t0.In(time.FixedZone("X", 3600)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := base
			tc.edit(&e)
			got, want := e.Line(), jsonLine(e)
			if got != want {
				t.Fatalf("Line:\n got %s\nwant %s", got, want)
			}
			back, err := ParseLine(got)
			if err != nil {
				t.Fatal(err)
			}
			// (JSON holds no invalid UTF-8: such bytes are read back as U+FFFD.)
			if (back.URL != e.URL && utf8.ValidString(e.URL)) || back.Offset != e.Offset || back.Length != e.Length || back.Method != e.Method {
				t.Errorf("ParseLine(Line(e)) = %+v, want %+v", back, e)
			}
		})
	}
}

// TestWriterIndexSorted: the index a Writer writes is sorted as
// SortEntries sorts: by SURT, then by time (captures of one URL in the
// order they were made, even within one second).
func TestWriterIndexSorted(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, Options{})
	urls := []string{"https://b.example/", "https://a.example/x", "https://a.example/", "https://b.example/", "https://a.example/x/y"}
	for i, u := range urls {
		ex := exchange(u, 200, fmt.Sprintf("page %d", i))
		ex.Date = t0.Add(time.Duration(len(urls)-i) * time.Millisecond) // later writes, earlier dates
		write(t, w, ex)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f := files(t, dir)[0]
	got, err := ReadIndex(IndexPath(f))
	if err != nil {
		t.Fatal(err)
	}
	want, err := IndexFile(f) // the entries read back from the records
	if err != nil {
		t.Fatal(err)
	}
	SortEntries(want)
	if len(got) != len(want) {
		t.Fatalf("%d index lines, want %d", len(got), len(want))
	}
	var g, wl []string
	for i := range got {
		g, wl = append(g, got[i].Line()), append(wl, want[i].Line())
	}
	if strings.Join(g, "\n") != strings.Join(wl, "\n") {
		t.Errorf("index:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(wl, "\n"))
	}
}

// TestSURTOf checks the key made from a parsed URL against the one made
// from its text, and both against the expected keys.
func TestSURTOf(t *testing.T) {
	cases := []struct{ url, want string }{
		{"https://www.Example.com/a?b", "com,example)/a?b"},
		{"http://example.com", "com,example)/"},
		{"http://example.com:80/x", "com,example)/x"},
		{"https://example.com:443/x", "com,example)/x"},
		{"http://example.com:8080/X/Y?Q=1&R=2", "com,example:8080)/x/y?q=1&r=2"},
		{"https://127.0.0.1:4000/p", "1,0,0,127:4000)/p"},
		{"http://a..b/", "b,,a)/"},
		{"http://sub.www.example.org/%C3%89t%C3%A9", "org,example,www,sub)/%c3%89t%c3%a9"},
		{"http://example.com/\u00c9t\u00e9?\u00c9", "com,example)/%c3%89t%c3%a9?\u00e9"},
		{"http://[::1]:9000/a", "::1:9000)/a"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := SURT(c.url); got != c.want {
			t.Errorf("SURT(%q) = %q, want %q", c.url, got, c.want)
		}
		if got := SURTOf(u); got != c.want {
			t.Errorf("SURTOf(%q) = %q, want %q", c.url, got, c.want)
		}
	}
}
