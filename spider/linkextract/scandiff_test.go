package linkextract

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// docDiff describes the first difference between the scanned Documents got
// (ScanDocument) and want (the tokenizer's scan), "" when they are the
// same: every element's name, atom, attributes and the text of its text
// children, its subtree and attribute slots; title, base, meta robots; and
// the links of an Extractor with default options.
func docDiff(got, want *Document) string {
	if got.titleSeen != want.titleSeen || got.title != want.title {
		return fmt.Sprintf("title %q (seen %v), want %q (seen %v)", got.title, got.titleSeen, want.title, want.titleSeen)
	}
	if got.base.String() != want.base.String() || got.noFollow != want.noFollow {
		return fmt.Sprintf("base %s nofollow %v, want %s nofollow %v", got.base, got.noFollow, want.base, want.noFollow)
	}
	if len(got.elems) != len(want.elems) || len(got.refs) != len(want.refs) {
		return fmt.Sprintf("%d elements, %d attributes; want %d, %d\ngot  %s\nwant %s",
			len(got.elems), len(got.refs), len(want.elems), len(want.refs), elemsString(got), elemsString(want))
	}
	for i := range got.elems {
		g, w := got.elems[i], want.elems[i]
		if g.end != w.end || g.off != w.off {
			return fmt.Sprintf("element %d: end %d off %d, want %d %d", i, g.end, g.off, w.end, w.off)
		}
		if s, t := elemString(g.n), elemString(w.n); s != t {
			return fmt.Sprintf("element %d:\ngot  %s\nwant %s", i, s, t)
		}
	}
	ex := MustNew(Options{})
	if g, w := describe(ex.Links(got)), describe(ex.Links(want)); !slices.Equal(g, w) {
		return fmt.Sprintf("links\ngot  %q\nwant %q", g, w)
	}
	return ""
}

// elemString writes an element's type, name, atom, attributes and the
// text of its text children (concatenated, as they are).
func elemString(n *html.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d<%q atom=%d", n.Type, n.Data, n.DataAtom)
	for _, a := range n.Attr {
		fmt.Fprintf(&b, " %q:%q=%q", a.Namespace, a.Key, a.Val)
	}
	var text strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			text.WriteString(c.Data)
		}
	}
	fmt.Fprintf(&b, ">%q", text.String())
	return b.String()
}

func elemsString(d *Document) string {
	var parts []string
	for _, e := range d.elems {
		parts = append(parts, elemString(e.n))
	}
	return strings.Join(parts, " ")
}

var diffURL, _ = url.Parse("https://example.com/dir/page")

// checkScan fails t when ScanDocument and the tokenizer's scan of body
// differ.
func checkScan(t *testing.T, body string) {
	t.Helper()
	got, want := ScanDocument([]byte(body), diffURL), scanDocumentTokenizer([]byte(body), diffURL)
	if diff := docDiff(got, want); diff != "" {
		t.Fatalf("page %q: %s", body, diff)
	}
}

// FuzzScanMatchesTokenizer checks that ScanDocument reads any page exactly
// as x/net/html's tokenizer does (scanDocumentTokenizer, the scan before
// the scanner of its own).
func FuzzScanMatchesTokenizer(f *testing.F) {
	for _, p := range scanPages {
		f.Add(p)
	}
	for _, p := range tagNameCases {
		f.Add(p)
	}
	for _, tc := range scannerStates {
		f.Add(tc.body)
	}
	for _, p := range hostileSeeds {
		f.Add(p)
	}
	f.Add(page)
	f.Add(`<a href="/x&fjlig;y&notit;&amp&#x0;">t&fjlig;</a>`) // entities a fuzzer does not guess
	for _, p := range s1Pages(f, 2) {
		f.Add(string(p))
	}
	f.Fuzz(func(t *testing.T, body string) {
		checkScan(t, body)
	})
}

// hostileSeeds are the pages of the hostile tests, for the fuzz target.
var hostileSeeds = []string{
	"<a href=\"/\xff\xfe\">bad utf-8</a><a href=\"/nul\x00x\">nul</a><a href=\"/ok\">ok</a>",
	`<a href="jav&#x09;ascript:alert(1)">x</a><a href="java&#9;script:1" rel=nofollow><area href=../..>`,
	`<base href="//x"><a href="javascript:x">`,
	`<a href="%">`,
	strings.Repeat(`<a href="/p/x1">x</a>`, 20),
	hostilePage(40),
}

// s1Pages returns n pages of benchmark S1's site (4 KiB, 10 links each),
// served by a local simsite.
func s1Pages(tb testing.TB, n int) [][]byte {
	tb.Helper()
	srv, err := simsite.Start(context.Background(), simsite.Config{Hosts: []simsite.HostConfig{{Name: "one", Seed: 1,
		Pages: simsite.PagesConfig{Count: 20000, Graph: simsite.GraphTree, Fanout: 10, Size: 4096}}}})
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Close()
	var out [][]byte
	for i := range n {
		resp, err := http.Get(srv.URL("one") + simsite.PagePath(i*7%1999+1))
		if err != nil {
			tb.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, body)
	}
	return out
}

// TestScanMatchesTokenizerOnS1 compares the two scans on pages of S1.
func TestScanMatchesTokenizerOnS1(t *testing.T) {
	for _, p := range s1Pages(t, 20) {
		checkScan(t, string(p))
	}
}
