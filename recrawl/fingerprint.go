package recrawl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Hash is a content fingerprint: the first 16 bytes of a SHA-256.
type Hash [16]byte

// IsZero reports whether h was never set.
func (h Hash) IsZero() bool { return h == Hash{} }

// String returns h in hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalJSON writes h as a hex string.
func (h Hash) MarshalJSON() ([]byte, error) { return json.Marshal(h.String()) }

// UnmarshalJSON reads a hex string.
func (h *Hash) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != len(h) {
		return fmt.Errorf("fingerprint %q: want %d hex bytes", s, len(h))
	}
	copy(h[:], raw)
	return nil
}

// FingerprintMode says what of a body the fingerprint covers.
type FingerprintMode string

const (
	// FingerprintBody hashes the body as downloaded: any byte changed is
	// a change.
	FingerprintBody FingerprintMode = "body"
	// FingerprintText hashes the text of an HTML page with its tags,
	// comments, scripts and styles removed and runs of white space made
	// one space: a page whose only difference is a nonce in a script, a
	// CSRF token in an attribute or re-indented markup is unchanged.
	FingerprintText FingerprintMode = "text"
)

// ParseFingerprintMode reads RECRAWL_FINGERPRINT's value.
func ParseFingerprintMode(s string) (FingerprintMode, error) {
	switch m := FingerprintMode(strings.ToLower(strings.TrimSpace(s))); m {
	case FingerprintBody, FingerprintText:
		return m, nil
	}
	return "", fmt.Errorf("%q is not a fingerprint mode; use body (every byte) or text (the page's text without tags, scripts and styles)", s)
}

// Fingerprint hashes body as mode says.
func Fingerprint(mode FingerprintMode, body []byte) Hash {
	if mode == FingerprintText {
		body = VisibleText(body)
	}
	sum := sha256.Sum256(body)
	var h Hash
	copy(h[:], sum[:])
	return h
}

// VisibleText returns the text of an HTML document: without tags,
// comments, and the content of script, style, noscript and template
// elements, with every run of white space made one space. It is a
// forgiving scan, not a parser: what is not markup is text.
func VisibleText(doc []byte) []byte {
	out := make([]byte, 0, len(doc)/2)
	space := true // no leading space
	emit := func(b []byte) {
		for _, c := range b {
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' {
				if !space {
					out = append(out, ' ')
					space = true
				}
				continue
			}
			out = append(out, c)
			space = false
		}
	}
	for len(doc) > 0 {
		lt := bytes.IndexByte(doc, '<')
		if lt < 0 {
			emit(doc)
			break
		}
		emit(doc[:lt])
		doc = doc[lt:]
		if bytes.HasPrefix(doc, []byte("<!--")) {
			end := bytes.Index(doc[4:], []byte("-->"))
			if end < 0 {
				break
			}
			doc = doc[4+end+3:]
			continue
		}
		gt := bytes.IndexByte(doc, '>')
		if gt < 0 {
			break
		}
		name := tagName(doc[1:gt])
		doc = doc[gt+1:]
		switch name {
		case "script", "style", "noscript", "template":
			end := indexFold(doc, "</"+name)
			if end < 0 {
				return bytes.TrimRight(out, " ")
			}
			doc = doc[end:]
			if gt := bytes.IndexByte(doc, '>'); gt >= 0 {
				doc = doc[gt+1:]
			} else {
				doc = nil
			}
		}
		if !space {
			out = append(out, ' ')
			space = true
		}
	}
	return bytes.TrimRight(out, " ")
}

// tagName returns the lower-case name of the tag whose inside (between <
// and >) is in, or "" for an end tag or a declaration.
func tagName(in []byte) string {
	i := 0
	for i < len(in) && (in[i] >= 'a' && in[i] <= 'z' || in[i] >= 'A' && in[i] <= 'Z' || in[i] >= '0' && in[i] <= '9') {
		i++
	}
	return strings.ToLower(string(in[:i]))
}

// indexFold is bytes.Index ignoring ASCII case.
func indexFold(s []byte, sub string) int {
	n, b := len(sub), []byte(sub)
	for i := 0; i+n <= len(s); i++ {
		if bytes.EqualFold(s[i:i+n], b) {
			return i
		}
	}
	return -1
}
