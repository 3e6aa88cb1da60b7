package linkextract

import (
	"bytes"
	"net/url"
	"sync"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// ScanDocument prepares the UTF-8 HTML page body for link extraction
// without building its tree. One pass of gocrawl's own scanner over body
// (no copy of the page) keeps the elements that have attributes (the only
// ones links come from), the text of each <a> (for Link.Text and
// Options.RestrictText) and the first <title> (Document.Title); it jumps
// from one '<' to the next through the text nobody reads. The scanner
// follows the HTML5 tokenizer state by state as golang.org/x/net/html
// implements it (comments, doctypes, raw-text elements such as <script>
// and <style>, RCDATA in <title> and <textarea>, attributes quoted or not,
// duplicate names dropped), so that it reads the same tags, attribute
// values (entities decoded, names lower-cased) and text as that tokenizer;
// a fuzz test, a table of the states and every entity name hold the two
// to the same output. It costs a fraction of a parse into a tree and
// allocates little: slabs of nodes and attributes sized by what the page
// holds, one string for all of an element's values.
//
// The elements of a scanned Document have no parent and no children but
// their text (one text node per <a>). An extractor that needs the tree
// (Options.RestrictCSS or RestrictText: Extractor.NeedsTree) parses the
// body once, on first use, and reads that tree instead: its links are the
// same either way, only the cost differs. <base href> and
// <meta name="robots"> are read as the tree parser reads them. On
// malformed markup the tree parser drops some elements that a scan keeps
// (an <a> inside a <select>, a <frame> outside a <frameset>): a scan may
// find such links where a parse finds none, and never misses one a parse
// finds. pageURL is as for NewDocument.
//
// The Document keeps body (for the extractors that parse it): the caller
// must not change it afterwards. Attribute values and texts are copies.
func ScanDocument(body []byte, pageURL *url.URL) *Document {
	d := &Document{page: pageURL, base: pageURL, flat: true, body: body}
	// Most attributes have a value: the count of '=' sizes the slabs, up
	// to 64 (the slabs grow as needed: a page's inline script may hold
	// thousands of '=' and no element at all).
	est := min(max(bytes.Count(body, []byte{'='}), 4), maxSlabGuess)
	d.elems = make([]elem, 0, est)
	sc := scratchPool.Get().(*scanScratch)
	defer scratchPool.Put(sc)
	z := scanner{b: body, attr: sc.attr[:0]}
	b := scanBuilder{
		nodes: make([]html.Node, 0, 2*est), // elements, and a text node per <a>
		attrs: make([]html.Attribute, 0, est),
		vals:  sc.vals[:0], ends: sc.ends[:0], text: sc.text[:0], tmp: sc.tmp[:0],
	}
	var (
		attrs    int32
		baseSeen bool
		anchor   *html.Node // the <a> whose text is being read
		inTitle  bool
		title    = sc.title[:0]
	)
	for {
		tt := z.next()
		switch tt {
		case tokError:
			b.closeAnchor(&anchor)
			d.prepareFast()
			d.refs = make([]*ref, attrs)
			if d.titleSeen {
				d.title = string(bytes.TrimSpace(title))
			}
			sc.keep(z.attr, b.vals, b.ends, b.text, b.tmp, title)
			return d
		case tokText:
			switch {
			case inTitle:
				title = appendText(title, body[z.data.start:z.data.end], z.convertNUL, z.textIsRaw)
			case anchor != nil:
				b.text = appendText(b.text, body[z.data.start:z.data.end], z.convertNUL, z.textIsRaw)
				b.hasText = true
			}
		case tokStartTag, tokSelfClosingTag:
			raw := body[z.data.start:z.data.end]
			var a atom.Atom
			var name []byte
			var nb [maxTagName]byte
			if len(z.attr) > 0 {
				name = lowerName(raw, &nb)
				a = atom.Lookup(name)
			} else {
				a = anchorOrTitle(raw) // all that matters of a tag without attributes
			}
			if a == atom.Title && !d.titleSeen {
				d.titleSeen, inTitle = true, tt == tokStartTag
			}
			if a == atom.A {
				b.closeAnchor(&anchor) // an <a> closes the one still open, as the tree parser does
			}
			if len(z.attr) == 0 {
				continue
			}
			n := b.element(&z, a, name)
			i := int32(len(d.elems))
			d.elems = append(d.elems, elem{n: n, end: i + 1, off: attrs})
			attrs += int32(len(n.Attr))
			d.noteHead(n, &baseSeen)
			if a == atom.A && tt == tokStartTag {
				anchor = n
			}
		case tokEndTag:
			switch anchorOrTitle(body[z.data.start:z.data.end]) {
			case atom.Title:
				inTitle = false
			case atom.A:
				b.closeAnchor(&anchor)
			}
		}
	}
}

// anchorOrTitle returns atom.A or atom.Title when the raw tag name is
// "a" or "title" in any case, 0 otherwise.
func anchorOrTitle(raw []byte) atom.Atom {
	switch {
	case len(raw) == 1 && raw[0]|0x20 == 'a':
		return atom.A
	case len(raw) == 5 && asciiEqualFold(raw, "title"):
		return atom.Title
	}
	return 0
}

// scanScratch is the scratch space of a scan, reused from one page to the
// next.
type scanScratch struct {
	attr                   [][2]span
	vals, text, tmp, title []byte
	ends                   []int
}

var scratchPool = sync.Pool{New: func() any { return new(scanScratch) }}

// maxScratch is the largest buffer a scanScratch keeps for the next page.
const maxScratch = 64 << 10

// keep stores the buffers a scan grew, unless one grew too large to keep.
func (sc *scanScratch) keep(attr [][2]span, vals []byte, ends []int, text, tmp, title []byte) {
	if cap(attr) > maxScratch/16 || cap(vals) > maxScratch || cap(text) > maxScratch ||
		cap(tmp) > maxScratch || cap(title) > maxScratch || cap(ends) > maxScratch/8 {
		return
	}
	sc.attr, sc.vals, sc.ends, sc.text, sc.tmp, sc.title = attr, vals, ends, text, tmp, title
}

// scanBuilder makes the nodes of a scanned Document: nodes and attributes
// come from slabs, a few at a time.
type scanBuilder struct {
	nodes []html.Node
	attrs []html.Attribute
	// vals are the decoded values of the element being built, ends where
	// each ends; tmp is scratch for decoding.
	vals, tmp []byte
	ends      []int
	// text is the decoded text of the open <a>; hasText says it had a
	// text token (even an empty one).
	text    []byte
	hasText bool
}

// maxSlabGuess bounds the first slabs of a scan (elements, attributes);
// S1's pages need fewer.
const maxSlabGuess = 64

// node returns a new node.
func (b *scanBuilder) node() *html.Node {
	if len(b.nodes) == cap(b.nodes) {
		b.nodes = make([]html.Node, 0, min(2*cap(b.nodes), 256))
	}
	b.nodes = b.nodes[:len(b.nodes)+1]
	return &b.nodes[len(b.nodes)-1]
}

// element returns the node of the start tag z has just read (which has
// attributes), named name (lower-cased) with atom a.
func (b *scanBuilder) element(z *scanner, a atom.Atom, name []byte) *html.Node {
	n := b.node()
	n.Type, n.DataAtom = html.ElementNode, a
	if a != 0 {
		n.Data = a.String()
	} else {
		n.Data = string(name)
	}
	k := len(z.attr)
	if cap(b.attrs)-len(b.attrs) < k {
		b.attrs = make([]html.Attribute, 0, max(min(2*cap(b.attrs), 256), k))
	}
	at := b.attrs[len(b.attrs) : len(b.attrs)+k : len(b.attrs)+k]
	b.attrs = b.attrs[:len(b.attrs)+k]
	b.vals, b.ends = b.vals[:0], b.ends[:0]
	for i, kv := range z.attr {
		at[i].Key = attrKey(z.b[kv[0].start:kv[0].end])
		b.vals, b.tmp = appendAttrValue(b.vals, z.b[kv[1].start:kv[1].end], b.tmp)
		b.ends = append(b.ends, len(b.vals))
	}
	vals := string(b.vals) // one copy for all the values
	from := 0
	for i, end := range b.ends {
		at[i].Val = vals[from:end]
		from = end
	}
	n.Attr = at
	return n
}

// closeAnchor gives the open <a> (*anchor) its text, and closes it.
func (b *scanBuilder) closeAnchor(anchor **html.Node) {
	if *anchor != nil && b.hasText {
		t := b.node()
		t.Type, t.Data = html.TextNode, string(b.text)
		(*anchor).AppendChild(t)
	}
	*anchor = nil
	b.text, b.hasText = b.text[:0], false
}

// maxTagName is the longest tag or attribute name lowerName and attrKey
// read into a buffer on the stack; the longest name with an atom
// ("blockquote", "figcaption", "foreignobject") is shorter.
const maxTagName = 24

// lowerName returns the raw tag name lower-cased, NUL bytes made U+FFFD, as
// Tokenizer.TagName returns it: in buf when it fits.
func lowerName(raw []byte, buf *[maxTagName]byte) []byte {
	if len(raw) > len(buf) || bytes.IndexByte(raw, 0) >= 0 {
		s := bytes.ReplaceAll(raw, []byte{0}, []byte("\ufffd"))
		return lowerASCIIInto(s, s)
	}
	return lowerASCIIInto(buf[:len(raw)], raw)
}

// attrKey returns an attribute's name as Tokenizer.TagAttr returns it
// (lower-cased, NUL bytes made U+FFFD), the atom's string when it is one.
func attrKey(raw []byte) string {
	var buf [maxTagName]byte
	return atom.String(lowerName(raw, &buf))
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
