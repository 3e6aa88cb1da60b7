package sitemap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func locs(f *File) []string {
	var out []string
	for _, e := range f.Entries {
		out = append(out, e.Loc)
	}
	return out
}

const urlset = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:xhtml="http://www.w3.org/1999/xhtml"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc> https://example.com/a?x=1&amp;y=2 </loc>
    <lastmod>2024-05-01</lastmod>
    <changefreq>Daily</changefreq>
    <priority>0.8</priority>
    <xhtml:link rel="alternate" hreflang="fr" href="https://example.com/fr/a"/>
    <xhtml:link rel="alternate" hreflang="de" href="https://example.com/de/a"/>
    <xhtml:link rel="canonical" href="https://example.com/ignored"/>
    <image:image><image:loc>https://example.com/img.png</image:loc></image:image>
  </url>
  <url><loc>https://example.com/b</loc><lastmod>2024-05-02T10:30:00+02:00</lastmod></url>
  <url><lastmod>2024-01-01</lastmod></url>
  <url><loc>https://example.com/c</loc><priority>7</priority><lastmod>yesterday</lastmod></url>
</urlset>`

func TestParseURLSet(t *testing.T) {
	f, err := Parse(strings.NewReader(urlset), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != URLSet || f.Invalid != 1 || f.Truncated {
		t.Errorf("kind %v invalid %d truncated %v", f.Kind, f.Invalid, f.Truncated)
	}
	if got := locs(f); !slices.Equal(got, []string{"https://example.com/a?x=1&y=2", "https://example.com/b", "https://example.com/c"}) {
		t.Errorf("locs %q", got)
	}
	a := f.Entries[0]
	if !a.LastMod.Equal(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)) || a.ChangeFreq != "daily" || a.Priority != 0.8 {
		t.Errorf("entry a: %+v", a)
	}
	if want := []Alternate{{"fr", "https://example.com/fr/a"}, {"de", "https://example.com/de/a"}}; !slices.Equal(a.Alternates, want) {
		t.Errorf("alternates %+v", a.Alternates)
	}
	if b := f.Entries[1]; !b.LastMod.Equal(time.Date(2024, 5, 2, 8, 30, 0, 0, time.UTC)) || b.Priority != 0.5 {
		t.Errorf("entry b: %+v", b)
	}
	if c := f.Entries[2]; !c.LastMod.IsZero() || c.Priority != 0.5 {
		t.Errorf("entry c (bad lastmod and priority): %+v", c)
	}
}

func TestParseIndex(t *testing.T) {
	const index = `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>https://example.com/s1.xml</loc><lastmod>2024-05-01T00:00:00Z</lastmod></sitemap>
<sitemap><loc>https://example.com/s2.xml.gz</loc></sitemap>
<url><loc>https://example.com/not-in-an-index</loc></url>
</sitemapindex>`
	f, err := Parse(strings.NewReader(index), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != Index || !slices.Equal(locs(f), []string{"https://example.com/s1.xml", "https://example.com/s2.xml.gz"}) {
		t.Errorf("kind %v locs %q", f.Kind, locs(f))
	}
}

func TestParseFormats(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		kind Kind
		want []string
	}{
		{"gzip", gz(t, urlset), URLSet, []string{"https://example.com/a?x=1&y=2", "https://example.com/b", "https://example.com/c"}},
		{"byte-order mark and blank lines", []byte("\xef\xbb\xbf\n\n  " + urlset), URLSet, []string{"https://example.com/a?x=1&y=2", "https://example.com/b", "https://example.com/c"}},
		{"no namespace, prefixed elements", []byte(`<sm:urlset xmlns:sm="x"><sm:url><sm:loc>https://e.com/p</sm:loc></sm:url></sm:urlset>`), URLSet, []string{"https://e.com/p"}},
		{"unescaped ampersand, as many sites write it", []byte(`<urlset><url><loc>https://e.com/?a=1&b=2</loc></url></urlset>`), URLSet, []string{"https://e.com/?a=1&b=2"}},
		{"CDATA", []byte(`<urlset><url><loc><![CDATA[https://e.com/c?x=<1>]]></loc></url></urlset>`), URLSet, []string{"https://e.com/c?x=<1>"}},
		{"latin-1", []byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset><url><loc>https://e.com/caf\xe9</loc></url></urlset>"), URLSet, []string{"https://e.com/café"}},
		{"text", []byte("https://e.com/1\r\n\n  https://e.com/2  \nnot a url\nftp://e.com/x\nhttps://e.com/3"), Text, []string{"https://e.com/1", "https://e.com/2", "https://e.com/3"}},
		{"gzipped text", gz(t, "https://e.com/1\n"), Text, []string{"https://e.com/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(bytes.NewReader(tt.body), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind != tt.kind || !slices.Equal(locs(f), tt.want) {
				t.Errorf("kind %v locs %q, want %v %q", f.Kind, locs(f), tt.kind, tt.want)
			}
		})
	}
	f, _ := Parse(strings.NewReader("https://e.com/1\nnot a url\nftp://e.com/x\n"), Limits{})
	if f.Invalid != 2 {
		t.Errorf("text: invalid %d, want 2", f.Invalid)
	}
}

func TestParseErrors(t *testing.T) {
	truncated := urlset[:strings.Index(urlset, "<url><loc>https://example.com/b")+20]
	tests := []struct {
		name    string
		body    []byte
		want    error
		msg     string
		entries int
	}{
		{"truncated XML keeps the entries before", []byte(truncated), ErrMalformed, "line 15", 1},
		{"cut inside a tag", []byte("<urlset><url><loc>https://e.com/1</loc></url>\n<url><lo"), ErrMalformed, "line 2", 1},
		{"a token longer than MaxToken", []byte("<urlset><url><loc>https://e.com/1</loc></url>\n<!--" + strings.Repeat("x", MaxToken) + "--></urlset>"), ErrMalformed, "longer than", 1},
		{"empty", nil, ErrMalformed, "empty file", 0},
		{"blank", []byte(" \n\t"), ErrMalformed, "empty file", 0},
		{"HTML page", []byte("<!DOCTYPE html><html><head><title>Not found</title></head><body>404</body></html>"), ErrNotSitemap, "<html>", 0},
		{"RSS feed", []byte(`<?xml version="1.0"?><rss><channel></channel></rss>`), ErrNotSitemap, "<rss>", 0},
		{"corrupt gzip", append(gz(t, urlset)[:40], 0xff, 0xff, 0xff), ErrMalformed, "gzip", 0},
		{"gzip header only", []byte{0x1f, 0x8b, 0x08}, ErrMalformed, "gzip", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(bytes.NewReader(tt.body), Limits{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q lacks %q", err, tt.msg)
			}
			if f == nil || len(f.Entries) != tt.entries {
				t.Errorf("file %+v, want %d entries", f, tt.entries)
			}
		})
	}
}

// Entries with control characters or invalid UTF-8 are dropped and counted.
func TestParseInvalidEntries(t *testing.T) {
	f, err := Parse(strings.NewReader("<urlset><url><loc>https://e.com/\x00</loc></url><url><loc>https://e.com/\xff\xfe</loc></url>"+
		"<url><loc>https://e.com/\x01</loc></url><url><loc>https://e.com/ok</loc></url></urlset>"), Limits{})
	if err != nil || f.Invalid != 3 || !slices.Equal(locs(f), []string{"https://e.com/ok"}) {
		t.Errorf("err %v invalid %d locs %q", err, f.Invalid, locs(f))
	}
}

// Broken markup is repaired as a browser would, not rejected: sitemaps
// written by hand often have mismatched tags or stray ones.
func TestParseMismatchedTags(t *testing.T) {
	f, err := Parse(strings.NewReader("<urlset><url><loc>https://e.com/1</loc></url>\n<url><loc>https://e.com/2</url><url><loc>https://e.com/3</loc></url></urlset>"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := locs(f); !slices.Equal(got, []string{"https://e.com/1", "https://e.com/2", "https://e.com/3"}) {
		t.Errorf("locs %q", got)
	}
	f, err = Parse(strings.NewReader("<urlset><url><loc>https://e.com/1</loc></url>\n</oops><url <loc>https://e.com/2</loc></url></urlset>"), Limits{})
	if err != nil || len(f.Entries) == 0 || f.Entries[0].Loc != "https://e.com/1" {
		t.Errorf("stray tags: err %v locs %q", err, locs(f))
	}
}

func TestLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("<urlset>")
	for i := range 10 {
		b.WriteString("<url><loc>https://e.com/" + strings.Repeat("p", i) + "</loc></url>\n")
	}
	b.WriteString("</urlset>")
	f, err := Parse(strings.NewReader(b.String()), Limits{MaxURLs: 4})
	if err != nil || !f.Truncated || len(f.Entries) != 4 {
		t.Errorf("MaxURLs 4: err %v truncated %v entries %d", err, f.Truncated, len(f.Entries))
	}
	f, err = Parse(strings.NewReader(b.String()), Limits{MaxURLs: 10})
	if err != nil || f.Truncated || len(f.Entries) != 10 {
		t.Errorf("exactly MaxURLs: err %v truncated %v entries %d", err, f.Truncated, len(f.Entries))
	}
	f, err = Parse(strings.NewReader(b.String()), Limits{MaxSize: 100})
	if !errors.Is(err, ErrTooLarge) || len(f.Entries) != 2 {
		t.Errorf("MaxSize 100: err %v entries %d", err, len(f.Entries))
	}
	f, err = Parse(strings.NewReader(b.String()), Limits{MaxSize: int64(b.Len())})
	if err != nil || len(f.Entries) != 10 {
		t.Errorf("exactly MaxSize: err %v entries %d", err, len(f.Entries))
	}
	// A loc longer than MaxLocLength is dropped, not kept half.
	long := "<urlset><url><loc>https://e.com/" + strings.Repeat("x", MaxLocLength) + "</loc></url><url><loc>https://e.com/ok</loc></url></urlset>"
	f, err = Parse(strings.NewReader(long), Limits{})
	if err != nil || f.Invalid != 1 || !slices.Equal(locs(f), []string{"https://e.com/ok"}) {
		t.Errorf("long loc: err %v invalid %d locs %q", err, f.Invalid, locs(f))
	}
}

func TestParseLastMod(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2024":                         time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		"2024-05":                      time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
		"2024-05-01":                   time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
		"2024-05-01T10:30+02:00":       time.Date(2024, 5, 1, 8, 30, 0, 0, time.UTC),
		"2024-05-01T10:30:15Z":         time.Date(2024, 5, 1, 10, 30, 15, 0, time.UTC),
		"2024-05-01T10:30:15.25-01:00": time.Date(2024, 5, 1, 11, 30, 15, 250e6, time.UTC),
		"2024-05-01T10:30:15+0100":     time.Date(2024, 5, 1, 9, 30, 15, 0, time.UTC),
		"2024-05-01T10:30:15":          time.Date(2024, 5, 1, 10, 30, 15, 0, time.UTC),
		" 2024-05-01 10:30:15+00:00 ":  time.Date(2024, 5, 1, 10, 30, 15, 0, time.UTC),
	} {
		got, err := ParseLastMod(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseLastMod(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "01/05/2024", "2024-13-01"} {
		if _, err := ParseLastMod(bad); err == nil {
			t.Errorf("ParseLastMod(%q) succeeded", bad)
		}
	}
}
