package linkextract

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/net/html"
)

// scanExtractors are the option sets a scanned document is compared on:
// the defaults, filters on URLs and domains, every tag and attribute, the
// text of links, and a CSS region (which makes the scanned document parse
// its body).
var scanExtractors = []Options{
	{},
	{Allow: []string{`/product/`}, Deny: []string{`#`}, DenyExtensions: []string{"pdf"}},
	{Tags: []string{"*"}, Attrs: []string{"href", "src"}, Canonicalize: true, SkipNoFollow: true},
	{AllowDomains: []string{"example.com"}, RestrictText: []string{`(?i)product`}},
	{RestrictCSS: []string{"main"}},
	{AllowDuplicates: true},
}

// scanPages are pages whose links a scan must read as the tree parser does:
// entities, <base href>, meta robots, raw-text elements hiding markup,
// unclosed anchors, attributes in any case.
var scanPages = []string{
	page,
	`<html><head><base href="/sub/"><meta name="ROBOTS" content="noindex, NoFollow"></head><body><a href="x?a=1&amp;b=2">X</a></body></html>`,
	`<title> A &amp; B </title><script>var s = '<a href="/no">';</script><style>a[href="/no2"]{}</style><textarea><a href="/no3"></textarea><a href=/yes>y</a>`,
	`<a href="/one">one <a href="/two">two</a> <A HREF="/Three" REL="NoFollow">three</A>`,
	`<svg><a xlink:href="/svg">s</a><title>svg title</title></svg><title>second</title><area href="/area"><img SRC="/i.png">`,
	`<noscript><a href="/ns">ns</a></noscript><template><a href="/tpl">tpl</a></template><iframe src="/frame"></iframe>`,
	`<a href="javascript:void(0)">j</a><a href="mailto:a@b">m</a><a href="  /spaced  ">s</a><a href="#top">t</a><a>none</a>`,
	``,
	`<p>text only, no links</p>`,
}

func TestScanDocumentMatchesTree(t *testing.T) {
	u, _ := url.Parse("https://example.com/catalogue/")
	for pi, body := range scanPages {
		root, err := html.Parse(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		tree, scan := NewDocument(root, u), ScanDocument([]byte(body), u)
		if !scan.Flat() || tree.Flat() {
			t.Fatalf("page %d: Flat: scan %v, tree %v", pi, scan.Flat(), tree.Flat())
		}
		if tree.Title() != scan.Title() && pi != 4 { // page 4: the tree's first <title> is the SVG one
			t.Errorf("page %d: Title: tree %q, scan %q", pi, tree.Title(), scan.Title())
		}
		if tree.Base().String() != scan.Base().String() || tree.NoFollow() != scan.NoFollow() {
			t.Errorf("page %d: base %s / %s, nofollow %v / %v", pi, tree.Base(), scan.Base(), tree.NoFollow(), scan.NoFollow())
		}
		for oi, o := range scanExtractors {
			ex := MustNew(o)
			want, got := describe(ex.Links(tree)), describe(ex.Links(scan))
			if !slices.Equal(want, got) {
				t.Errorf("page %d, options %d: scan found\n%s\ntree found\n%s", pi, oi, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

func describe(links []Link) []string {
	var out []string
	for _, l := range links {
		out = append(out, strings.Join([]string{l.URL, l.Fragment, l.Tag, l.Attr, l.Text(), map[bool]string{true: "nofollow"}[l.NoFollow], l.ParsedURL().String()}, " | "))
	}
	return out
}

func TestScanDocumentTitle(t *testing.T) {
	u, _ := url.Parse("http://h/")
	for body, want := range map[string]string{
		"<title>\n  Hello &lt;World&gt;  \n</title>": "Hello <World>",
		"<html><head></head><body>no title</body>":   "",
		"<title>first</title><title>second</title>":  "first",
		"<title><b>not markup</b></title>":           "<b>not markup</b>",
		"<title>unclosed":                            "unclosed",
	} {
		if got := ScanDocument([]byte(body), u).Title(); got != want {
			t.Errorf("Title of %q = %q, want %q", body, got, want)
		}
	}
}

// FuzzScanDocument checks that a scan finds every link a parse finds, on
// any page, for extractors that read no region (those parse anyway). On
// malformed markup the tree parser drops elements a scan keeps (an <a>
// inside a <select>, a <frame> outside a <frameset>), so the scan may find
// more, never less.
func FuzzScanDocument(f *testing.F) {
	for _, p := range scanPages {
		f.Add(p)
	}
	exs := []*Extractor{MustNew(Options{}), MustNew(Options{Tags: []string{"*"}, Attrs: []string{"href", "src"}})}
	u, _ := url.Parse("https://example.com/a/")
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(strings.ToLower(body), "<svg") || strings.Contains(strings.ToLower(body), "<math") {
			return // foreign content: the tree parser namespaces elements and attributes
		}
		root, err := html.Parse(strings.NewReader(body))
		if err != nil {
			return
		}
		tree, scan := NewDocument(root, u), ScanDocument([]byte(body), u)
		for _, ex := range exs {
			want, got := urls(ex.Links(tree)), urls(ex.Links(scan))
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Fatalf("scan found %q, tree %q: %q missing", got, want, w)
				}
			}
		}
	})
}

// tagNameCases are tag tokens for tagName: cases, NUL bytes, names longer
// than its buffer, every way a name can end.
var tagNameCases = []string{
	`<A HREF=x>`, `<a/>`, `<a	href=x>`, "<a\nhref=x>", "<a\fhref>", `<DiV>`, `</DiV >`, `</a>`,
	"<a\x00b href=x></a\x00b>", `<` + strings.Repeat("Long", 20) + ` x=1></` + strings.Repeat("lonG", 20) + `>`,
	`<blockquote cite=x>`, `<foreignObject x=1>`, `<x-custom-element data-x=1>`, `<é x=1>`, `<a`, `<br/>`,
}

// FuzzTagName checks tagName against Tokenizer.TagName on every tag token.
// tagName now serves the tokenizer-based reference scan only
// (scanref_test.go): this keeps the reference honest.
func FuzzTagName(f *testing.F) {
	for _, p := range append(slices.Clone(scanPages), tagNameCases...) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, body string) {
		// Two tokenizers in step: TagName consumes the name.
		z, ref := html.NewTokenizer(strings.NewReader(body)), html.NewTokenizer(strings.NewReader(body))
		for {
			tt := z.Next()
			ref.Next()
			if tt == html.ErrorToken {
				return
			}
			if tt != html.StartTagToken && tt != html.EndTagToken && tt != html.SelfClosingTagToken {
				continue
			}
			raw := string(z.Raw())
			var buf [maxTagName]byte
			got := string(tagName(z, &buf))
			want, _ := ref.TagName()
			if got != string(want) {
				t.Fatalf("tag %q: tagName %q, TagName %q", raw, got, want)
			}
		}
	})
}

// The tokenizer-based reference scan (scanref_test.go) keeps the
// attribute values TagAttr returns without copying them (ownedString):
// that is right only while TagAttr returns a copy, not a window on the
// tokenizer's buffer. A new x/net/html that changes this fails here, and
// the reference with it.
func TestTagAttrReturnsACopy(t *testing.T) {
	z := html.NewTokenizer(strings.NewReader(`<a href="/plain" class=c title='a &amp; b'>t</a>`))
	if z.Next() != html.StartTagToken {
		t.Fatal("no start tag")
	}
	raw := z.Raw()
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	hi := lo + uintptr(cap(raw))
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		if len(v) == 0 {
			t.Fatalf("attribute %q: empty value", k)
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(v))); lo <= p && p < hi {
			t.Fatalf("TagAttr's value of %q points into the tokenizer's buffer: ownedString must copy", k)
		}
	}
}

// Attribute values of a scanned page survive the tokenizer moving on.
func TestScanDocumentAttributeValuesStay(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, `<a href="/p/%d" title="t%d">x</a>`, i, i)
	}
	u, _ := url.Parse("https://example.com/")
	d := ScanDocument([]byte(b.String()), u)
	links := MustNew(Options{}).Links(d)
	if len(links) != 2000 {
		t.Fatalf("%d links, want 2000", len(links))
	}
	for i, l := range links {
		if want := fmt.Sprintf("https://example.com/p/%d", i); l.URL != want {
			t.Fatalf("link %d: %q, want %q", i, l.URL, want)
		}
	}
}
