package linkextract

import (
	"bytes"
	"net/url"
	"unsafe"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// scanDocumentTokenizer is ScanDocument as it was before the scanner of
// its own: one pass of x/net/html's tokenizer. It is the reference the
// scanner is held to (FuzzScanMatchesTokenizer, TestScannerStates): the
// same elements, attributes, texts, title, base and meta robots on every
// input.
func scanDocumentTokenizer(body []byte, pageURL *url.URL) *Document {
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
