package linkextract

import (
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

	// elems are the element nodes in document order; end[i] is the index
	// after the last element inside elems[i], so elems[i:end[i]] is its
	// subtree; attrOff[i] is where elems[i]'s attributes start in refs.
	elems   []*html.Node
	end     []int32
	attrOff []int32

	mu sync.Mutex
	// refs holds the resolution of each attribute value, by slot, once an
	// extractor has needed it; vrefs those of values rewritten by an
	// Options.ProcessValue; sites caches registrable domains by host.
	refs  []*ref
	vrefs map[string]*ref
	sites map[string]string
}

// ref is one attribute value resolved (shared by the extractors of a
// Document).
type ref struct {
	ok   bool
	u    *url.URL // absolute, without fragment
	s    string   // u.String()
	frag string
	host string // hostOf(u)
	// cu and key are the canonical URL and its string (the identity of the
	// link for uniqueness); ext and ext2 the extensions of the path.
	cu        *url.URL
	key       string
	ext, ext2 string
}

// NewDocument prepares root (an html.DocumentNode, as goquery's
// Document.Nodes[0], or any subtree) for link extraction. pageURL is the
// URL the page was fetched from: links resolve against it, or against the
// document's first <base href> when that is an http(s) URL.
func NewDocument(root *html.Node, pageURL *url.URL) *Document {
	d := &Document{page: pageURL, base: pageURL}
	if root == nil {
		return d
	}
	var (
		open     []int32 // indices of the elements whose subtree is being walked
		attrs    int32
		baseSeen bool
	)
	n := root
	for {
		if n.Type == html.ElementNode {
			i := int32(len(d.elems))
			d.elems = append(d.elems, n)
			d.end = append(d.end, i+1)
			d.attrOff = append(d.attrOff, attrs)
			attrs += int32(len(n.Attr))
			switch n.DataAtom {
			case atom.Base:
				if !baseSeen {
					if href, ok := attr(n, "href"); ok {
						baseSeen = true
						d.setBase(href)
					}
				}
			case atom.Meta:
				if name, _ := attr(n, "name"); strings.EqualFold(strings.TrimSpace(name), "robots") {
					content, _ := attr(n, "content")
					d.noFollow = d.noFollow || robotsNoFollow(content)
				}
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
				d.end[open[len(open)-1]] = int32(len(d.elems))
				open = open[:len(open)-1]
			}
		}
		if n == root {
			break
		}
		n = n.NextSibling
	}
	for _, i := range open { // root itself, when it is an element
		d.end[i] = int32(len(d.elems))
	}
	d.refs = make([]*ref, attrs)
	return d
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

// Len returns the number of elements of the document.
func (d *Document) Len() int { return len(d.elems) }

// resolveSlot returns the resolution of attribute j of element i, computed
// on first use. d.mu is held.
func (d *Document) resolveSlot(i, j int) *ref {
	slot := int(d.attrOff[i]) + j
	if r := d.refs[slot]; r != nil {
		return r
	}
	r := newRef(d.base, d.elems[i].Attr[j].Val)
	d.refs[slot] = r
	return r
}

// resolveValue returns the resolution of a value rewritten by
// ProcessValue. d.mu is held.
func (d *Document) resolveValue(v string) *ref {
	if r, ok := d.vrefs[v]; ok {
		return r
	}
	r := newRef(d.base, v)
	if d.vrefs == nil {
		d.vrefs = map[string]*ref{}
	}
	d.vrefs[v] = r
	return r
}

var notLink = &ref{}

func newRef(base *url.URL, v string) *ref {
	u, frag, ok := resolve(base, v)
	if !ok {
		return notLink
	}
	r := &ref{ok: true, u: u, s: u.String(), frag: frag, host: hostOf(u)}
	r.cu = Canonical(u)
	if r.cu == u {
		r.key = r.s
	} else {
		r.key = r.cu.String()
	}
	r.ext, r.ext2 = extensions(u.Path)
	return r
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
