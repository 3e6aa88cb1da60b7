package dupefilter

import (
	"crypto/sha256"
	"encoding/binary"
	"net/url"
	"sort"
	"strings"

	"github.com/gocrawl/gocrawl/spider"
)

// MetaSalt is the meta key of a request's fingerprint salt: a non-empty
// string there is part of the request's fingerprint (see Of), so the
// request is a duplicate only of requests with the same salt. It lets a
// request for a resource already seen be queued once more, and only
// once, per salt: package engine salts the revisits of a recrawl round
// with the round's number, so that each known URL is queued once per
// round even when its seeding is started over after a kill. Use
// Unsalted for the fingerprint of the resource alone.
const MetaSalt = "dupefilter_salt"

// Of returns the fingerprint of req: a SHA-256 of its method, its canonical
// URL (see CanonicalURL), its body and its salt (MetaSalt, when it has
// one), truncated to 16 bytes. Headers and other meta are not part of it:
// two requests for the same resource with different headers are
// duplicates (set DontFilter on the request to send it anyway). A request
// without a salt has the fingerprint it had before salts existed.
func Of(req *spider.Request) Fingerprint {
	var salt string
	if len(req.Meta) > 0 {
		salt, _ = req.Meta[MetaSalt].(string)
	}
	return of(req, salt)
}

// Unsalted returns the fingerprint of the resource req asks for: Of
// without the request's salt, the same for every salted copy of it.
func Unsalted(req *spider.Request) Fingerprint { return of(req, "") }

func of(req *spider.Request, salt string) Fingerprint {
	method := req.EffectiveMethod()
	var fp Fingerprint
	// The usual request (a GET of a URL of a few dozen bytes) is hashed in
	// one call from a buffer on the stack, the canonical URL written into
	// it in place; a large one is streamed. Both hash the same bytes: each
	// field as its length (8 bytes, big endian) then its bytes; the salt,
	// when there is one, is a last field.
	var stack [256]byte
	buf := appendField(stack[:0], method)
	at := len(buf)
	buf = appendCanonicalURL(append(buf, make([]byte, 8)...), req.URL)
	binary.BigEndian.PutUint64(buf[at:], uint64(len(buf)-at-8))
	saltLen := 0
	if salt != "" {
		saltLen = 8 + len(salt)
	}
	if len(buf)+8+len(req.Body)+saltLen <= len(stack) {
		buf = appendField(buf, string(req.Body))
		if salt != "" {
			buf = appendField(buf, salt)
		}
		sum := sha256.Sum256(buf)
		copy(fp[:], sum[:])
		return fp
	}
	h := sha256.New()
	h.Write(buf)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(req.Body)))
	h.Write(n[:])
	h.Write(req.Body)
	if salt != "" {
		binary.BigEndian.PutUint64(n[:], uint64(len(salt)))
		h.Write(n[:])
		h.Write([]byte(salt))
	}
	copy(fp[:], h.Sum(nil))
	return fp
}

// appendField appends len(s) (8 bytes, big endian) and s to buf.
func appendField(buf []byte, s string) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(s)))
	return append(buf, s...)
}

// CanonicalURL returns u in the form used for fingerprints: scheme and host
// lower-cased, the scheme's default port dropped, query parameters sorted
// by key then value (their encoding normalised), the fragment dropped.
// The path is kept as written, because servers may treat its case and
// encoding as significant.
func CanonicalURL(u *url.URL) string {
	return string(appendCanonicalURL(make([]byte, 0, 64), u))
}

// appendCanonicalURL appends CanonicalURL(u) to dst.
func appendCanonicalURL(dst []byte, u *url.URL) []byte {
	scheme := strings.ToLower(u.Scheme)
	dst = append(dst, scheme...)
	dst = append(dst, "://"...)
	if u.User != nil {
		dst = append(dst, u.User.String()...)
		dst = append(dst, '@')
	}
	dst = append(dst, spider.HostKey(&url.URL{Scheme: scheme, Host: u.Host})...)
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	dst = append(dst, path...)
	// An empty query ("?", "?&") is no query: "/?&" and "/" are one
	// resource, and the canonical form must stay canonical when parsed
	// again.
	if u.RawQuery == "" {
		return dst
	}
	if canonicalQuery(u.RawQuery) {
		dst = append(dst, '?')
		return append(dst, u.RawQuery...)
	}
	if q := sortedQuery(u.RawQuery); q != "" {
		dst = append(dst, '?')
		dst = append(dst, q...)
	}
	return dst
}

// canonicalQuery reports whether raw is its own sortedQuery, without
// allocating, for the usual query ("page=2", "a=1&b=2"): no empty pair, at
// most one '=' per pair, only bytes that query escaping leaves alone (so
// decoding and encoding again change nothing), pairs in order.
func canonicalQuery(raw string) bool {
	var prevK, prevV string
	for i, rest := 0, raw; rest != ""; i++ {
		p, next, _ := strings.Cut(rest, "&")
		if p == "" || (next == "" && len(p) < len(rest)) {
			return false // an empty pair, or a trailing '&'
		}
		k, v, _ := strings.Cut(p, "=")
		if !unreservedOnly(k) || !unreservedOnly(v) {
			return false
		}
		if i > 0 && (k < prevK || (k == prevK && v < prevV)) {
			return false
		}
		prevK, prevV, rest = k, v, next
	}
	return true
}

// unreservedOnly reports whether s has only letters, digits and "-_.~",
// the bytes url.QueryEscape keeps as they are.
func unreservedOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~') {
			return false
		}
	}
	return true
}

// sortedQuery sorts the key=value pairs of a raw query, keeping repeated
// keys and blank values ("a&b=" stays distinct from "a=&b").
func sortedQuery(raw string) string {
	type kv struct{ k, v, raw string }
	parts := strings.Split(raw, "&")
	pairs := make([]kv, 0, len(parts))
	for _, p := range parts {
		if p == "" {
			continue
		}
		k, v, hasEq := strings.Cut(p, "=")
		ku, err1 := url.QueryUnescape(k)
		vu, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			pairs = append(pairs, kv{k: k, v: v, raw: p})
			continue
		}
		enc := url.QueryEscape(ku)
		if hasEq {
			enc += "=" + url.QueryEscape(vu)
		}
		pairs = append(pairs, kv{k: ku, v: vu, raw: enc})
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.raw
	}
	return strings.Join(out, "&")
}
