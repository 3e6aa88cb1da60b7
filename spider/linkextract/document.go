package linkextract

import (
	"hash/maphash"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Document is a parsed page prepared for link extraction: one walk over
// its tree lists the elements in document order and finds <base href> and
// <meta name="robots">. Every extractor run on the same Document shares
// that walk and the resolution of each attribute value, so a crawl spider
// with several rules costs one walk and one URL resolution per link, not
// one per rule. spider.Response builds one per response (LinkDocument) and
// caches it with the parsed HTML.
//
// A Document is safe for concurrent use; extractors running on it at the
// same time take turns.
type Document struct {
	page, base *url.URL
	noFollow   bool
	// prefix is the base's "scheme://host" and baseDir its path up to the
	// last '/', when the base is plain enough for fastResolve (prefix is ""
	// otherwise); canon reports that prefix is in canonical form.
	prefix, baseDir string
	canon           bool
	bhost           string
	// title is the text of the first <title>, trimmed.
	title     string
	titleSeen bool
	// flat: built by ScanDocument from body, elements have no subtree;
	// tree is body parsed, for the extractors that need it.
	flat     bool
	body     []byte
	treeOnce sync.Once
	tree     *Document

	// elems are the element nodes in document order.
	elems []elem

	mu sync.Mutex
	// refs holds the resolution of each attribute value, by slot, once an
	// extractor has needed it; vrefs those of values rewritten by an
	// Options.ProcessValue; sites caches registrable domains by host.
	refs  []*ref
	slab  []ref // refs are allocated from here, a few at a time
	vrefs map[string]*ref
	sites map[string]string
}

// elem is an element of a Document: elems[i:end] is its subtree, and its
// attributes' resolutions start at refs[off].
type elem struct {
	n        *html.Node
	end, off int32
}

// ref is one attribute value resolved (shared by the extractors of a
// Document).
type ref struct {
	// s is the absolute URL without fragment; "" means not a link.
	s string
	// key is the canonical form of s (the identity of the link for
	// uniqueness), and hash its hash for Seen.
	key  string
	hash uint64
	// u is the URL parsed. A link resolved by fastResolve has none: it is
	// base with path, built when someone asks (Link.ParsedURL).
	u    *url.URL
	base *url.URL
	path string
	x    *refExtra // rarely needed, so not in every ref
}

// refExtra holds what few refs need: a fragment, a canonical URL that
// differs from the URL, the host of a URL parsed by net/url.
type refExtra struct {
	frag string
	cu   *url.URL
	host string
}

func (r *ref) extra() *refExtra {
	if r.x == nil {
		r.x = &refExtra{}
	}
	return r.x
}

func (r *ref) fragment() string {
	if r.x == nil {
		return ""
	}
	return r.x.frag
}

// url returns r's URL: the parsed one, or a new one built from base and
// path (the caller owns it).
func (r *ref) url() *url.URL {
	if r.u != nil {
		return r.u
	}
	v := *r.base
	v.Path, v.RawPath = r.path, ""
	v.RawQuery, v.ForceQuery = "", false
	v.Fragment, v.RawFragment = "", ""
	return &v
}

// urlPath returns the path of r's URL.
func (r *ref) urlPath() string {
	if r.u != nil {
		return r.u.Path
	}
	return r.path
}

// NewDocument prepares root (an html.DocumentNode, as goquery's
// Document.Nodes[0], or any subtree) for link extraction. pageURL is the
// URL the page was fetched from: links resolve against it, or against the
// document's first <base href> when that is an http(s) URL.
func NewDocument(root *html.Node, pageURL *url.URL) *Document {
	d := &Document{page: pageURL, base: pageURL}
	if root == nil {
		d.prepareFast()
		return d
	}
	d.elems = make([]elem, 0, 32)
	var (
		openBuf  [64]int32
		open     = openBuf[:0] // indices of the elements whose subtree is being walked
		attrs    int32
		baseSeen bool
	)
	n := root
	for {
		if n.Type == html.ElementNode {
			i := int32(len(d.elems))
			d.elems = append(d.elems, elem{n: n, end: i + 1, off: attrs})
			attrs += int32(len(n.Attr))
			d.noteHead(n, &baseSeen)
			if n.DataAtom == atom.Title && !d.titleSeen {
				d.titleSeen = true
				d.title = strings.TrimSpace(nodeText(n))
			}
			if n.FirstChild != nil {
				open = append(open, i)
			}
		}
		if n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		// Climb to the next sibling, closing the subtrees left behind.
		for n != root && n.NextSibling == nil {
			n = n.Parent
			if n.Type == html.ElementNode && len(open) > 0 {
				d.elems[open[len(open)-1]].end = int32(len(d.elems))
				open = open[:len(open)-1]
			}
		}
		if n == root {
			break
		}
		n = n.NextSibling
	}
	for _, i := range open { // root itself, when it is an element
		d.elems[i].end = int32(len(d.elems))
	}
	d.prepareFast()
	d.refs = make([]*ref, attrs)
	return d
}

// noteHead applies what an element says about the whole document: the
// first <base href> and <meta name="robots">.
func (d *Document) noteHead(n *html.Node, baseSeen *bool) {
	switch n.DataAtom {
	case atom.Base:
		if !*baseSeen {
			if href, ok := attr(n, "href"); ok {
				*baseSeen = true
				d.setBase(href)
			}
		}
	case atom.Meta:
		if name, _ := attr(n, "name"); strings.EqualFold(strings.TrimSpace(name), "robots") {
			content, _ := attr(n, "content")
			d.noFollow = d.noFollow || robotsNoFollow(content)
		}
	}
}

// setBase applies a <base href>: relative to the page, http(s) only.
func (d *Document) setBase(href string) {
	r, err := url.Parse(cleanRef(href))
	if err != nil {
		return
	}
	b := d.page.ResolveReference(r)
	if (b.Scheme == "http" || b.Scheme == "https") && b.Host != "" {
		d.base = b
	}
}

// prepareFast sets prefix, baseDir and canon when the base URL has no user
// information and a plain path (see plainPath).
func (d *Document) prepareFast() {
	b := d.base
	if b.User != nil || b.Opaque != "" || b.RawPath != "" || !plainHost(b.Host) ||
		(b.Path != "" && (b.Path[0] != '/' || !plainPath(b.Path) || hasDotSegment(b.Path))) {
		return
	}
	d.prefix = b.Scheme + "://" + b.Host
	d.baseDir = b.Path[:strings.LastIndexByte(b.Path, '/')+1]
	if d.baseDir == "" {
		d.baseDir = "/"
	}
	d.canon = canonicalHost(b) == b.Host
}

// plainHost reports whether a URL's host is written as net/url writes
// it: letters, digits and ".-_:[]" (IPv6 literals and ports included).
func plainHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '-', c == '_', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}

// fastResolve resolves the links most pages are made of without
// net/url's parser: a root-relative path ("/page/2"), a relative one
// ("item/3.html", "../up"), or an absolute URL on the base's own scheme and
// host, whose path is plain (letters, digits, "-._~" and "/", no "//"). It
// returns the path and the string of the URL url.Parse and
// ResolveReference would give, with at most one allocation; ok is false
// for anything else. The URL itself is the base with that path.
func (d *Document) fastResolve(ref string) (path, s string, ok bool) {
	if d.prefix == "" || ref == "" {
		return "", "", false
	}
	switch {
	case ref[0] == '/':
		if len(ref) > 1 && ref[1] == '/' {
			return "", "", false // another host
		}
		path = ref
	case strings.HasPrefix(ref, d.prefix):
		path = ref[len(d.prefix):]
		if path == "" || path[0] != '/' {
			return "", "", false // "http://host" alone, or a longer host or port
		}
		s = ref
	default:
		path = ref // relative to baseDir; a scheme or a query is not plain
	}
	if !plainPath(path) {
		return "", "", false
	}
	if path[0] != '/' {
		if hasDotSegment(path) {
			return d.withoutDots(d.baseDir + path)
		}
		s = d.prefix + d.baseDir + path
		return s[len(d.prefix):], s, true
	}
	if hasDotSegment(path) {
		return d.withoutDots(path)
	}
	if s == "" {
		s = d.prefix + path
	}
	return path, s, true
}

// withoutDots is fastResolve for a path with dot segments; "//" is left
// to net/url.
func (d *Document) withoutDots(path string) (string, string, bool) {
	if strings.Contains(path, "//") {
		return "", "", false
	}
	s := removeDots(d.prefix, path)
	return s[len(d.prefix):], s, true
}

// robotsNoFollow reports whether a robots meta content forbids following
// links: "nofollow" or "none" among its comma-separated values.
func robotsNoFollow(content string) bool {
	for v := range strings.SplitSeq(content, ",") {
		v = strings.TrimSpace(v)
		if strings.EqualFold(v, "nofollow") || strings.EqualFold(v, "none") {
			return true
		}
	}
	return false
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// Base returns the URL relative links resolve against: the document's
// <base href>, or the page URL.
func (d *Document) Base() *url.URL { return d.base }

// NoFollow reports whether the document's <meta name="robots"> says
// "nofollow" (or "none"): every link of it is then marked NoFollow.
func (d *Document) NoFollow() bool { return d.noFollow }

// Title returns the text of the document's first <title> element, white
// space trimmed ("" when it has none).
func (d *Document) Title() string { return d.title }

// Flat reports whether d was built by ScanDocument (elements without
// their subtrees) rather than from a parsed tree.
func (d *Document) Flat() bool { return d.flat }

// Len returns the number of elements of the document.
func (d *Document) Len() int { return len(d.elems) }

// resolveSlot returns the resolution of attribute j of element i, computed
// on first use. d.mu is held.
func (d *Document) resolveSlot(i, j int) *ref {
	slot := int(d.elems[i].off) + j
	if r := d.refs[slot]; r != nil {
		return r
	}
	r := d.newRef(d.elems[i].n.Attr[j].Val)
	d.refs[slot] = r
	return r
}

// resolveValue returns the resolution of a value rewritten by
// ProcessValue. d.mu is held.
func (d *Document) resolveValue(v string) *ref {
	if r, ok := d.vrefs[v]; ok {
		return r
	}
	r := d.newRef(v)
	if d.vrefs == nil {
		d.vrefs = map[string]*ref{}
	}
	d.vrefs[v] = r
	return r
}

var notLink = &ref{}

// seed hashes link keys for Seen.
var seed = maphash.MakeSeed()

// newRef resolves v. d.mu is held.
func (d *Document) newRef(v string) *ref {
	clean := cleanRef(v)
	if path, s, ok := d.fastResolve(clean); ok {
		r := d.allocRef(ref{s: s, base: d.base, path: path})
		if d.canon { // a plain path on a canonical host: canonical already
			r.key = s
		} else {
			r.setKey()
		}
		r.hash = maphash.String(seed, r.key)
		return r
	}
	u, frag, ok := resolve(d.base, clean)
	if !ok {
		return notLink
	}
	r := d.allocRef(ref{u: u, s: u.String()})
	if frag != "" {
		r.extra().frag = frag
	}
	r.setKey()
	r.hash = maphash.String(seed, r.key)
	return r
}

// allocRef stores r in the slab. d.mu is held.
func (d *Document) allocRef(r ref) *ref {
	if len(d.slab) == cap(d.slab) {
		d.slab = make([]ref, 0, 8)
	}
	d.slab = append(d.slab, r)
	return &d.slab[len(d.slab)-1]
}

// setKey computes the canonical URL of r and its string.
func (r *ref) setKey() {
	u := r.url()
	if cu := Canonical(u); cu != u {
		r.extra().cu, r.key = cu, cu.String()
	} else {
		r.key = r.s
	}
}

// hostOf returns r's host for the domain filters, computed once. d.mu is
// held.
func (d *Document) hostOf(r *ref) string {
	if r.u == nil { // resolved against the base: on its host
		return d.baseHost()
	}
	x := r.extra()
	if x.host == "" {
		x.host = hostOf(r.u)
	}
	return x.host
}

// baseHost returns hostOf(d.base), cached. d.mu is held.
func (d *Document) baseHost() string {
	if d.bhost == "" {
		d.bhost = hostOf(d.base)
	}
	return d.bhost
}

// site returns the registrable domain of host, cached. d.mu is held.
func (d *Document) site(host string) string {
	if s, ok := d.sites[host]; ok {
		return s
	}
	s := registrable(host)
	if d.sites == nil {
		d.sites = map[string]string{}
	}
	d.sites[host] = s
	return s
}
