package linkextract

import (
	"bytes"
	"net/url"
	"unsafe"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// ScanDocument prepares the UTF-8 HTML page body for link extraction
// without building its tree: one pass of the x/net/html tokenizer keeps
// only the elements that have attributes (the only ones links come from),
// the text of each <a> (for Link.Text and Options.RestrictText) and the
// first <title> (Document.Title). It costs about half of a parse into a
// tree and allocates a fraction of it, which is most of the CPU of a crawl
// that only follows links.
//
// The elements of a scanned Document have no parent and no children but
// their text. An extractor that needs the tree (Options.RestrictCSS or
// RestrictText: Extractor.NeedsTree) parses the body once, on first use,
// and reads that tree instead: its links are the same either way, only the
// cost differs. Attribute values, <base href> and
// <meta name="robots"> are read as the tree parser reads them (entities
// decoded, names lower-cased). On malformed markup the tree parser drops
// some elements that a scan keeps (an <a> inside a <select>, a <frame>
// outside a <frameset>): a scan may find such links where a parse finds
// none, and never misses one a parse finds. pageURL is as for NewDocument.
func ScanDocument(body []byte, pageURL *url.URL) *Document {
	d := &Document{page: pageURL, base: pageURL, flat: true, body: body}
	d.elems = make([]elem, 0, 32)
	z := html.NewTokenizer(bytes.NewReader(body))
	var (
		attrs    int32
		baseSeen bool
		anchor   *html.Node // the <a> whose text is being read
		inTitle  bool
		title    []byte
	)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			d.prepareFast()
			d.refs = make([]*ref, attrs)
			if d.titleSeen {
				d.title = string(bytes.TrimSpace(title))
			}
			return d
		case html.TextToken:
			switch {
			case inTitle:
				title = append(title, z.Text()...)
			case anchor != nil:
				anchor.AppendChild(&html.Node{Type: html.TextNode, Data: string(z.Text())})
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			var nb [maxTagName]byte
			name := tagName(z, &nb)
			a := atom.Lookup(name)
			if a == atom.Title && !d.titleSeen {
				d.titleSeen, inTitle = true, tt == html.StartTagToken
			}
			if a == atom.A {
				anchor = nil // an <a> closes the one still open, as the tree parser does
			}
			k, v, more := z.TagAttr()
			if k == nil { // no attributes (the tokenizer keeps no empty name)
				continue
			}
			n := &html.Node{Type: html.ElementNode, DataAtom: a}
			if a != 0 {
				n.Data = a.String()
			} else {
				n.Data = string(name)
			}
			for {
				n.Attr = append(n.Attr, html.Attribute{Key: atom.String(k), Val: ownedString(v)})
				if !more {
					break
				}
				k, v, more = z.TagAttr()
			}
			i := int32(len(d.elems))
			d.elems = append(d.elems, elem{n: n, end: i + 1, off: attrs})
			attrs += int32(len(n.Attr))
			d.noteHead(n, &baseSeen)
			if a == atom.A && tt == html.StartTagToken {
				anchor = n
			}
		case html.EndTagToken:
			var nb [maxTagName]byte
			switch atom.Lookup(tagName(z, &nb)) {
			case atom.Title:
				inTitle = false
			case atom.A:
				anchor = nil
			}
		}
	}
}

// maxTagName is the longest tag name tagName reads into its buffer; the
// longest name with an atom ("blockquote", "figcaption", "foreignobject")
// is shorter.
const maxTagName = 24

// tagName returns the lower-cased name of the current tag token, as
// Tokenizer.TagName does, read from the token's raw bytes into buf:
// TagName copies the name (bytes.ReplaceAll) on every tag. A name too long
// for buf or holding a NUL byte (which TagName replaces) is left to
// TagName. The result is valid until the next call to z.Next.
func tagName(z *html.Tokenizer, buf *[maxTagName]byte) []byte {
	raw := z.Raw()
	i := 1 // after '<'
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			return buf[:n]
		case 0:
			name, _ := z.TagName()
			return name
		}
		if n == len(buf) {
			name, _ := z.TagName()
			return name
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return buf[:n]
}

// ownedString returns b as a string without copying it. b must be a slice
// nobody else holds or changes: what Tokenizer.TagAttr returns is a copy
// made for the caller (TestTagAttrReturnsACopy checks it against the
// tokenizer's buffer, in case a new x/net/html hands out its own bytes).
func ownedString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// treeDoc returns the Document of the parsed body of a scanned d, built on
// first use (for extractors that NeedsTree).
func (d *Document) treeDoc() *Document {
	d.treeOnce.Do(func() {
		root, err := html.Parse(bytes.NewReader(d.body))
		if err != nil { // html.Parse fails only on reader errors
			root = nil
		}
		d.tree = NewDocument(root, d.page)
	})
	return d.tree
}

// NeedsTree reports whether ex reads more of a page than a scanned
// Document keeps (ScanDocument): an Options.RestrictCSS region, or the
// text of elements for Options.RestrictText.
func (ex *Extractor) NeedsTree() bool { return ex.restrict != nil || len(ex.restrictText) > 0 }
