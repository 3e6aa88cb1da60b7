package sitemap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// repeatReader streams head, then body n times, then tail, without
// holding the whole document in memory.
type repeatReader struct {
	parts []string
	n     int
	i     int
	cur   *strings.Reader
}

func newRepeat(head, body string, n int, tail string) *repeatReader {
	return &repeatReader{parts: []string{head, body, tail}, n: n}
}

func (r *repeatReader) Read(p []byte) (int, error) {
	for {
		if r.cur != nil && r.cur.Len() > 0 {
			return r.cur.Read(p)
		}
		switch {
		case r.i == 0:
			r.cur, r.i = strings.NewReader(r.parts[0]), 1
		case r.i == 1 && r.n > 0:
			r.cur = strings.NewReader(r.parts[1])
			r.n--
		case r.i == 1:
			r.cur, r.i = strings.NewReader(r.parts[2]), 2
		default:
			return 0, io.EOF
		}
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A 60 MB sitemap: read up to the 50 MB limit, the URLs before it kept.
func TestSixtyMegabyteSitemap(t *testing.T) {
	// 1,000 URLs, each followed by a 60 KB comment: 60 MB in all.
	entry := "<url><loc>https://e.com/p</loc></url><!--" + strings.Repeat("x", 60<<10) + "-->\n"
	var f *File
	var err error
	alloc := allocated(func() {
		f, err = Parse(newRepeat("<urlset>", entry, 1000, "</urlset>"), Limits{})
	})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if want := DefaultMaxSize / len(entry); len(f.Entries) < want-1 || len(f.Entries) > want+1 {
		t.Errorf("%d entries kept, want about %d (those before the limit)", len(f.Entries), want)
	}
	if alloc > 2*DefaultMaxSize && !raceEnabled {
		t.Errorf("allocated %d MB to read a 60 MB sitemap", alloc>>20)
	}
}

// gzipped returns parts compressed, the middle one repeated n times.
func gzipped(head, body string, n int, tail string) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	io.Copy(w, newRepeat(head, body, n, tail))
	w.Close()
	return b.Bytes()
}

var (
	// 64 MB of white space inside a urlset: one 64 MB token.
	spaceBomb = sync.OnceValue(func() []byte {
		return gzipped("<urlset><url><loc>https://e.com/first</loc></url>", strings.Repeat(" ", 1<<20), 64, "</urlset>")
	})
	// 64 MB of tiny elements: many small tokens, so the size limit is
	// what stops it.
	tagBomb = sync.OnceValue(func() []byte {
		return gzipped("<urlset><url><loc>https://e.com/first</loc></url>", strings.Repeat("<x></x><y/>", 1<<17), 48, "</urlset>")
	})
)

// A gzip bomb named sitemap.xml.gz: decompression stops at the size
// limit, or sooner at a token longer than MaxToken, and memory stays small.
func TestGzipBomb(t *testing.T) {
	tests := []struct {
		name  string
		bomb  []byte
		limit int64
		want  error
	}{
		{"white space, 1 MB limit", spaceBomb(), 1 << 20, ErrMalformed},
		{"white space, 50 MB limit", spaceBomb(), DefaultMaxSize, ErrMalformed},
		{"tags, 1 MB limit", tagBomb(), 1 << 20, ErrTooLarge},
		{"tags, 5 MB limit", tagBomb(), 5 << 20, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.bomb) > 1<<20 {
				t.Fatalf("bomb is %d bytes compressed", len(tt.bomb))
			}
			var f *File
			var err error
			alloc := allocated(func() { f, err = Parse(bytes.NewReader(tt.bomb), Limits{MaxSize: tt.limit}) })
			if !errors.Is(err, tt.want) || len(f.Entries) != 1 {
				t.Errorf("err %v, entries %d", err, len(f.Entries))
			}
			// The tokenizer holds one token; what it allocates per tag
			// (x/net/html's TagName) is garbage, a few bytes per byte read.
			if alloc > uint64(3*tt.limit)+(4<<20) && !raceEnabled {
				t.Errorf("allocated %d MB", alloc>>20)
			}
			t.Logf("%d KB compressed: %v; allocated %d KB", len(tt.bomb)>>10, err, alloc>>10)
		})
	}
}

// 200,000 URLs in one file: the first 50,000 are kept.
func TestTwoHundredThousandURLs(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("<urlset>\n")
	for i := range 200000 {
		fmt.Fprintf(&b, "<url><loc>https://e.com/p/%d</loc></url>\n", i)
	}
	b.WriteString("</urlset>")
	f, err := Parse(&b, Limits{})
	if err != nil || !f.Truncated || len(f.Entries) != DefaultMaxURLs || f.Entries[DefaultMaxURLs-1].Loc != "https://e.com/p/49999" {
		t.Errorf("err %v truncated %v entries %d", err, f.Truncated, len(f.Entries))
	}
	var text strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&text, "https://e.com/t/%d\n", i)
	}
	f, err = Parse(strings.NewReader(text.String()), Limits{})
	if err != nil || !f.Truncated || len(f.Entries) != DefaultMaxURLs {
		t.Errorf("text: err %v truncated %v entries %d", err, f.Truncated, len(f.Entries))
	}
}

func TestDeeplyNestedXML(t *testing.T) {
	const depth = 200000
	doc := "<urlset><url><loc>https://e.com/ok</loc></url>" + strings.Repeat("<x>", depth) + strings.Repeat("</x>", depth) + "</urlset>"
	f, err := Parse(strings.NewReader(doc), Limits{})
	if err != nil || len(f.Entries) != 1 {
		t.Errorf("err %v entries %d", err, len(f.Entries))
	}
}

func TestEntitiesAreNotExpanded(t *testing.T) {
	// The billion laughs: encoding/xml does not define entities from a DTD.
	doc := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<urlset><url><loc>https://e.com/&lol2;</loc></url></urlset>`
	f, err := Parse(strings.NewReader(doc), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != 1 || strings.Contains(f.Entries[0].Loc, "lollol") {
		t.Errorf("entries %+v", f.Entries)
	}
}

func TestTextSitemapLongLines(t *testing.T) {
	body := "https://e.com/1\n" + strings.Repeat("y", 1<<20) + "\nhttps://e.com/2\n"
	f, err := Parse(strings.NewReader(body), Limits{})
	if err != nil || f.Invalid != 1 || len(f.Entries) != 2 {
		t.Errorf("err %v invalid %d entries %q", err, f.Invalid, locs(f))
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(urlset))
	f.Add([]byte(`<sitemapindex><sitemap><loc>https://e.com/s.xml</loc></sitemap></sitemapindex>`))
	f.Add([]byte("https://e.com/1\nhttps://e.com/2"))
	f.Add(gz(f, "<urlset><url><loc>x</loc></url></urlset>"))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(bytes.NewReader(data), Limits{MaxSize: 1 << 16, MaxURLs: 50})
		if file == nil {
			t.Fatalf("nil file (err %v)", err)
		}
		if len(file.Entries) > 50 {
			t.Fatalf("%d entries", len(file.Entries))
		}
		for _, e := range file.Entries {
			if e.Loc == "" || len(e.Loc) > MaxLocLength {
				t.Fatalf("entry %q", e.Loc)
			}
		}
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrNotSitemap) {
			t.Fatalf("error of no known kind: %v", err)
		}
	})
}
