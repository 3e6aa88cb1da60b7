package dupefilter

import (
	"crypto/sha256"
	"encoding/binary"
	"net/url"
	"sort"
	"strings"

	"github.com/gocrawl/gocrawl/spider"
)

// Of returns the fingerprint of req: a SHA-256 of its method, its canonical
// URL (see CanonicalURL) and its body, truncated to 16 bytes. Headers and
// meta are not part of it: two requests for the same resource with
// different headers are duplicates (set DontFilter on the request to send
// it anyway).
func Of(req *spider.Request) Fingerprint {
	method, cu := req.GetMethod(), CanonicalURL(req.URL)
	var fp Fingerprint
	// The usual request (a GET of a URL of a few dozen bytes) is hashed in
	// one call from a buffer on the stack; a large body is streamed. Both
	// hash the same bytes: each field as its length (8 bytes, big endian)
	// then its bytes.
	var stack [256]byte
	if n := 3*8 + len(method) + len(cu) + len(req.Body); n <= len(stack) {
		buf := appendField(stack[:0], method)
		buf = appendField(buf, cu)
		buf = appendField(buf, string(req.Body))
		sum := sha256.Sum256(buf)
		copy(fp[:], sum[:])
		return fp
	}
	h := sha256.New()
	var n [8]byte
	write := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	write([]byte(method))
	write([]byte(cu))
	write(req.Body)
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
	var b strings.Builder
	b.WriteString(strings.ToLower(u.Scheme))
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(u.User.String())
		b.WriteByte('@')
	}
	b.WriteString(spider.HostKey(&url.URL{Scheme: strings.ToLower(u.Scheme), Host: u.Host}))
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(path)
	// An empty query ("?", "?&") is no query: "/?&" and "/" are one
	// resource, and the canonical form must stay canonical when parsed
	// again.
	if q := sortedQuery(u.RawQuery); q != "" {
		b.WriteByte('?')
		b.WriteString(q)
	}
	return b.String()
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
