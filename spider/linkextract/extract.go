package linkextract

import (
	"hash/maphash"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// Link is a link an Extractor kept.
type Link struct {
	// URL is the absolute http(s) URL without its fragment, in canonical
	// form when Options.Canonicalize is set.
	URL string
	// Fragment is what followed '#' in the link, if anything.
	Fragment string
	// NoFollow is set for rel="nofollow" links and every link of a page
	// whose <meta name="robots"> says nofollow.
	NoFollow bool
	// Tag and Attr say where the link was read ("a", "href").
	Tag, Attr string
	// Node is the element the link was read from, in the parsed document.
	Node *html.Node

	r *ref
}

// Text returns the element's text with runs of white space collapsed to
// one space and trimmed: the anchor text of a link, "" for an <img>.
func (l Link) Text() string {
	if l.Node == nil {
		return ""
	}
	return nodeText(l.Node)
}

// ParsedURL returns the link's URL parsed: a new value each call, which
// the caller may modify.
func (l Link) ParsedURL() *url.URL {
	if l.r == nil {
		u, err := url.Parse(l.URL)
		if err != nil {
			return &url.URL{}
		}
		return u
	}
	if l.URL != l.r.s && l.r.x != nil && l.r.x.cu != nil {
		return copyURL(l.r.x.cu)
	}
	if l.r.u == nil {
		return l.r.url() // a new one
	}
	return copyURL(l.r.u)
}

func copyURL(src *url.URL) *url.URL {
	u := *src
	if src.User != nil {
		uu := *src.User
		u.User = &uu
	}
	return &u
}

// Key returns the canonical form of the link's URL (see Canonical): two
// links with the same key are the same page for uniqueness.
func (l Link) Key() string {
	if l.r == nil {
		if u, err := url.Parse(l.URL); err == nil {
			return Canonical(u).String()
		}
		return l.URL
	}
	return l.r.key
}

// Seen is a set of link keys shared by several extractors of one page, so
// that each link goes to the first extractor that keeps it (see
// AppendLinks). The zero value is an empty set; it is not safe for
// concurrent use.
type Seen struct {
	// A page has a few dozen links: an array of hashes beats a map until
	// then, and a Seen on the stack costs no allocation.
	hashes [24]uint64
	keys   [24]string
	n      int
	m      map[string]struct{}
}

// Has reports whether key is in the set.
func (s *Seen) Has(key string) bool { return s.has(maphash.String(seed, key), key) }

// Add adds key and reports whether it was new.
func (s *Seen) Add(key string) bool { return s.add(maphash.String(seed, key), key) }

func (s *Seen) has(h uint64, key string) bool {
	if s.m != nil {
		_, ok := s.m[key]
		return ok
	}
	for i := range s.n {
		if s.hashes[i] == h && s.keys[i] == key {
			return true
		}
	}
	return false
}

func (s *Seen) add(h uint64, key string) bool {
	if s.has(h, key) {
		return false
	}
	if s.m == nil && s.n < len(s.keys) {
		s.hashes[s.n], s.keys[s.n] = h, key
		s.n++
		return true
	}
	if s.m == nil {
		s.m = make(map[string]struct{}, 4*len(s.keys))
		for _, k := range s.keys[:s.n] {
			s.m[k] = struct{}{}
		}
		s.keys, s.n = [len(s.keys)]string{}, 0
	}
	s.m[key] = struct{}{}
	return true
}

// Len returns the number of keys in the set.
func (s *Seen) Len() int {
	if s.m != nil {
		return len(s.m)
	}
	return s.n
}

// Links returns the links of doc that ex keeps, in document order.
func (ex *Extractor) Links(doc *Document) []Link { return ex.AppendLinks(nil, doc, nil) }

// AppendLinks appends the links of doc that ex keeps to dst and returns
// the extended slice. With a non-nil seen, links whose key is already in
// seen are skipped before any filter runs, and the links kept are added to
// it: share one Seen between the extractors of a page so that the first
// one to keep a link wins it, as the rules of a spider.CrawlSpider do.
func (ex *Extractor) AppendLinks(dst []Link, doc *Document, seen *Seen) []Link {
	if doc != nil && doc.flat && ex.NeedsTree() {
		doc = doc.treeDoc()
	}
	if doc == nil || len(doc.elems) == 0 {
		return dst
	}
	doc.mu.Lock()
	defer doc.mu.Unlock()
	var local Seen // this call's keys, when seen is nil or duplicates are kept
	first := len(dst)
	regionEnd := int32(-1) // elems[:regionEnd] from the current region's root on are inside it
	for i := range doc.elems {
		e := &doc.elems[i]
		n := e.n
		if len(n.Attr) == 0 || !ex.tagOK(n) {
			if ex.restrict != nil && int32(i) >= regionEnd && ex.restrict.Match(n) {
				regionEnd = e.end
			}
			continue
		}
		if ex.restrict != nil && int32(i) >= regionEnd {
			if !ex.restrict.Match(n) {
				continue
			}
			regionEnd = e.end
		}
		for j := range n.Attr {
			a := &n.Attr[j]
			if a.Namespace != "" || !slices.Contains(ex.attrs, a.Key) {
				continue
			}
			var r *ref
			if ex.process != nil {
				v, ok := ex.process(a.Val)
				if !ok {
					continue
				}
				r = doc.resolveValue(v)
			} else {
				r = doc.resolveSlot(i, j)
			}
			if r.s == "" {
				continue
			}
			if seen != nil && seen.has(r.hash, r.key) {
				continue
			}
			noFollow := doc.noFollow || relNoFollow(n)
			if noFollow && ex.skipNoFollow {
				continue
			}
			if !ex.accept(doc, r, n) {
				continue
			}
			if !ex.dups {
				if seen != nil {
					if !seen.add(r.hash, r.key) {
						continue
					}
				} else if !local.add(r.hash, r.key) {
					continue
				}
			}
			l := Link{URL: r.s, Fragment: r.fragment(), NoFollow: noFollow, Tag: n.Data, Attr: a.Key, Node: n, r: r}
			if ex.canonicalize {
				l.URL = r.key
			}
			dst = append(dst, l)
		}
	}
	if ex.dups && seen != nil {
		for _, l := range dst[first:] {
			seen.add(l.r.hash, l.r.key)
		}
	}
	return dst
}

// tagOK reports whether ex reads n's attributes.
func (ex *Extractor) tagOK(n *html.Node) bool {
	if ex.anyTag {
		return true
	}
	if n.DataAtom != 0 {
		return slices.Contains(ex.tagAtoms, n.DataAtom)
	}
	return slices.Contains(ex.tagNames, n.Data)
}

// accept applies the URL, domain, extension and text filters to r.
func (ex *Extractor) accept(doc *Document, r *ref, n *html.Node) bool {
	if len(ex.denyExt) > 0 {
		if ext, ext2 := extensions(r.urlPath()); ext != "" {
			if _, ok := ex.denyExt[ext]; ok {
				return false
			}
			if ext2 != "" {
				if _, ok := ex.denyExt[ext2]; ok {
					return false
				}
			}
		}
	}
	if ex.allowDomains.Len() > 0 && !ex.allowDomains.Contains(doc.hostOf(r)) {
		return false
	}
	if ex.denyDomains.Len() > 0 && ex.denyDomains.Contains(doc.hostOf(r)) {
		return false
	}
	if ex.sameSite && doc.site(doc.hostOf(r)) != doc.site(hostOf(doc.page)) {
		return false
	}
	u := r.s
	if ex.canonicalize {
		u = r.key
	}
	if len(ex.allow) > 0 && !matchAny(ex.allow, u) {
		return false
	}
	if len(ex.deny) > 0 && matchAny(ex.deny, u) {
		return false
	}
	if len(ex.restrictText) > 0 && !matchAny(ex.restrictText, nodeText(n)) {
		return false
	}
	return true
}

func matchAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// relNoFollow reports whether n has "nofollow" among its rel values.
func relNoFollow(n *html.Node) bool {
	rel, ok := attr(n, "rel")
	if !ok {
		return false
	}
	for _, v := range strings.Fields(rel) {
		if strings.EqualFold(v, "nofollow") {
			return true
		}
	}
	return false
}

// nodeText returns the text inside n, white space collapsed and trimmed.
// It walks without recursion: hostile pages nest elements deeply.
func nodeText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		if c.FirstChild != nil && c.Type == html.ElementNode {
			c = c.FirstChild
			continue
		}
		for c != n && c.NextSibling == nil {
			c = c.Parent
		}
		if c == n {
			break
		}
		c = c.NextSibling
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
