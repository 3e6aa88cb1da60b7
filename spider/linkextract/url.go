package linkextract

import (
	"bytes"
	"net"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// This file holds what the extractor does to one attribute value: clean it
// as a browser would, reject other schemes before parsing, resolve it, and
// the canonical form, extension and host used by the filters.

// cleanRef trims the ASCII whitespace around an attribute value and removes
// tabs and newlines inside it, as browsers do (WHATWG URL parsing), so that
// "java\tscript:" is seen as the javascript: link it is. It allocates only
// when there is something inside to remove.
func cleanRef(v string) string {
	for len(v) > 0 && htmlSpace(v[0]) {
		v = v[1:]
	}
	for len(v) > 0 && htmlSpace(v[len(v)-1]) {
		v = v[:len(v)-1]
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\t' || c == '\n' || c == '\r' {
			return strings.Map(func(r rune) rune {
				if r == '\t' || r == '\n' || r == '\r' {
					return -1
				}
				return r
			}, v)
		}
	}
	return v
}

func htmlSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// schemeOf returns the scheme of ref ("" for a relative reference) without
// parsing it: letters, digits, '+', '-' and '.' before the first ':',
// starting with a letter. data: URLs can be megabytes long; they are
// rejected by their scheme before any parsing.
func schemeOf(ref string) string {
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9', c == '+', c == '-', c == '.':
			if i == 0 {
				return ""
			}
		case c == ':':
			return ref[:i]
		default:
			return ""
		}
	}
	return ""
}

// webScheme reports whether s is http or https, in any case.
func webScheme(s string) bool {
	return strings.EqualFold(s, "http") || strings.EqualFold(s, "https")
}

// resolve returns ref (cleaned by cleanRef) resolved against base,
// without its fragment, or ok=false for a value that is not a link to an
// http(s) page: empty, fragment-only (a link to the page itself), another
// scheme (javascript:, mailto:, data:, tel:, ftp:), unparsable or without
// a host.
func resolve(base *url.URL, ref string) (u *url.URL, frag string, ok bool) {
	if ref == "" || ref[0] == '#' {
		return nil, "", false
	}
	if s := schemeOf(ref); s != "" && !webScheme(s) {
		return nil, "", false
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, "", false
	}
	if r.Scheme != "" && r.Host != "" && r.Opaque == "" && !hasDotSegment(r.Path) {
		// ResolveReference would copy r and leave its path as it is.
		u = r
	} else {
		u = base.ResolveReference(r)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", false
	}
	frag = u.Fragment
	u.Fragment, u.RawFragment = "", ""
	return u, frag, true
}

// plainPath reports whether p is made only of letters, digits, "-._~"
// and "/": a path that needs no escaping and no unescaping.
func plainPath(p string) bool {
	if p == "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; !unreserved(c) && c != '/' {
			return false
		}
	}
	return true
}

// removeDots returns prefix followed by the absolute path p without its
// "." and ".." segments, as RFC 3986 (5.2.4) and net/url's resolution
// remove them: "/a/b/../c/./d" is "/a/c/d", and a path ending in a dot
// segment ends with "/". It makes one allocation.
func removeDots(prefix, p string) string {
	out := make([]byte, len(prefix), len(prefix)+len(p)+1)
	copy(out, prefix)
	for i := 0; ; { // p[i] is a '/'
		j := strings.IndexByte(p[i+1:], '/')
		seg := p[i+1:]
		if j >= 0 {
			seg = p[i+1 : i+1+j]
		}
		switch seg {
		case ".":
		case "..":
			if k := bytes.LastIndexByte(out[len(prefix):], '/'); k >= 0 {
				out = out[:len(prefix)+k]
			}
		default:
			out = append(out, '/')
			out = append(out, seg...)
		}
		if j < 0 {
			if seg == "." || seg == ".." {
				out = append(out, '/')
			}
			break
		}
		i += 1 + j
	}
	return string(out)
}

// hasDotSegment reports whether path has a "." or ".." segment, or an
// empty one ("//"), that resolution treats specially.
func hasDotSegment(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '/':
			if i+1 < len(p) && p[i+1] == '/' {
				return true
			}
		case '.':
			if i > 0 && p[i-1] != '/' {
				continue
			}
			end := i + 1
			if end < len(p) && p[end] == '.' {
				end++
			}
			if end == len(p) || p[end] == '/' {
				return true
			}
		}
	}
	return false
}

// hostOf returns u's host name lower-cased, without port or trailing dot,
// in IDNA ASCII form ("bücher.example" -> "xn--bcher-kva.example"), as
// allowed and denied domains are written.
func hostOf(u *url.URL) string {
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if !isASCII(h) {
		if a, err := idna.Lookup.ToASCII(h); err == nil {
			h = a
		}
	}
	return h
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// registrable returns the registrable domain (eTLD+1 from the Public
// Suffix List) of a lower-case host; IP addresses, single labels and
// public suffixes are returned as they are.
func registrable(host string) string {
	if net.ParseIP(strings.Trim(host, "[]")) != nil || !strings.Contains(host, ".") {
		return host
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return host
	}
	return d
}

// extensions returns the lower-case extension of the last segment of path
// ("pdf" for "/a/Report.PDF") and the two-part one ("tar.gz" for
// "/x.tar.gz"), or "" when there is none.
func extensions(path string) (ext, ext2 string) {
	seg := path[strings.LastIndexByte(path, '/')+1:]
	i := strings.LastIndexByte(seg, '.')
	if i < 0 || i == len(seg)-1 {
		return "", ""
	}
	ext = strings.ToLower(seg[i+1:])
	if j := strings.LastIndexByte(seg[:i], '.'); j >= 0 && j < i-1 {
		ext2 = strings.ToLower(seg[j+1:])
	}
	return ext, ext2
}

// Canonical returns u in canonical form, as Options.Canonicalize writes
// links and as duplicates are recognised: scheme and host lower-cased (an
// international host in IDNA ASCII form), the scheme's default port
// dropped, an empty path written "/", percent-escapes normalised in path
// and query (upper-case hex; letters, digits and "-._~" unescaped), query
// parameters sorted by name then value (repeated names and blank values
// kept), and the fragment dropped. u is not modified; when it is already
// canonical it is returned as is.
func Canonical(u *url.URL) *url.URL {
	host := canonicalHost(u)
	path := normalizeEscapes(u.EscapedPath())
	if path == "" {
		path = "/"
	}
	query := u.RawQuery
	if query != "" {
		query = sortQuery(query)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == u.Scheme && host == u.Host && path == u.EscapedPath() && query == u.RawQuery &&
		u.Fragment == "" && u.RawFragment == "" && !u.ForceQuery && u.Opaque == "" {
		return u
	}
	c := *u
	c.Scheme, c.Host, c.RawQuery, c.ForceQuery = scheme, host, query, false
	c.Fragment, c.RawFragment = "", ""
	c.Opaque = ""
	if p, err := url.PathUnescape(path); err == nil {
		c.Path, c.RawPath = p, path
		if c.EscapedPath() != path {
			c.RawPath = ""
		}
	}
	return &c
}

// canonicalHost returns u.Host lower-cased, in IDNA ASCII form, without
// the scheme's default port.
func canonicalHost(u *url.URL) string {
	h := u.Host
	if !isASCII(h) {
		name, port := u.Hostname(), u.Port()
		if a, err := idna.Lookup.ToASCII(name); err == nil {
			name = a
		}
		h = name
		if port != "" {
			h = net.JoinHostPort(name, port)
		}
	}
	h = strings.ToLower(h)
	switch {
	case strings.EqualFold(u.Scheme, "http") && strings.HasSuffix(h, ":80"):
		h = h[:len(h)-3]
	case strings.EqualFold(u.Scheme, "https") && strings.HasSuffix(h, ":443"):
		h = h[:len(h)-4]
	}
	return h
}

// unreserved reports the characters RFC 3986 never needs escaped.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// normalizeEscapes decodes percent-escapes of unreserved characters and
// upper-cases the hex digits of the others; a '%' not followed by two hex
// digits is escaped as "%25". It returns s itself when nothing changes.
func normalizeEscapes(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				v := hi<<4 | lo
				if unreserved(v) {
					b.WriteByte(v)
				} else {
					const hexUpper = "0123456789ABCDEF"
					b.WriteByte('%')
					b.WriteByte(hexUpper[v>>4])
					b.WriteByte(hexUpper[v&15])
				}
				i += 2
				continue
			}
		}
		b.WriteString("%25")
	}
	if out := b.String(); out != s {
		return out
	}
	return s
}

// sortQuery sorts the "name=value" pairs of a raw query by name, then
// value, after normalising their escapes; empty pairs ("a&&b") are
// dropped. It returns raw itself when nothing changes.
func sortQuery(raw string) string {
	n := strings.Count(raw, "&") + 1
	if n == 1 {
		return normalizeEscapes(raw)
	}
	pairs := make([]string, 0, n)
	for p := range strings.SplitSeq(raw, "&") {
		if p != "" {
			pairs = append(pairs, normalizeEscapes(p))
		}
	}
	slices.SortStableFunc(pairs, func(a, b string) int {
		an, av, _ := strings.Cut(a, "=")
		bn, bv, _ := strings.Cut(b, "=")
		if c := strings.Compare(an, bn); c != 0 {
			return c
		}
		return strings.Compare(av, bv)
	})
	out := strings.Join(pairs, "&")
	if out == raw {
		return raw
	}
	return out
}
