package linkextract

import (
	"bytes"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Decoding text and attribute values as html.Tokenizer's Text and TagAttr
// do: "\r\n" and "\r" become "\n", NUL bytes U+FFFD (in attribute values,
// raw text and RCDATA; plain text keeps them), and character references
// are decoded (not in raw text). Text decodes them as html.UnescapeString
// does; attribute values in the attribute mode of the HTML5 tokenizer (a
// named reference without its ';' is left alone before a '=', and is never
// read as a shorter name followed by letters).

// appendText appends the decoded text of a text token (its raw bytes s).
func appendText(dst, s []byte, convertNUL, raw bool) []byte {
	start := len(dst)
	dst = appendNewlines(dst, s, convertNUL)
	if !raw && bytes.IndexByte(dst[start:], '&') >= 0 {
		u := html.UnescapeString(string(dst[start:]))
		dst = append(dst[:start], u...)
	}
	return dst
}

// appendNewlines appends s with "\r\n" and "\r" made "\n", and NUL bytes
// made U+FFFD when convertNUL is set.
func appendNewlines(dst, s []byte, convertNUL bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\r':
			dst = append(dst, '\n')
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case c == 0 && convertNUL:
			dst = append(dst, "\ufffd"...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// plainValue reports whether an attribute value needs no decoding: no
// '&', '\r' or NUL.
func plainValue(s []byte) bool {
	for _, c := range s {
		if c == '&' || c == '\r' || c == 0 {
			return false
		}
	}
	return true
}

// appendAttrValue appends the decoded attribute value whose raw bytes are
// s; tmp is scratch space, returned for reuse.
func appendAttrValue(dst, s, tmp []byte) (out, scratch []byte) {
	if plainValue(s) {
		return append(dst, s...), tmp
	}
	tmp = appendNewlines(tmp[:0], s, true)
	for i := 0; i < len(tmp); {
		j := bytes.IndexByte(tmp[i:], '&')
		if j < 0 {
			dst = append(dst, tmp[i:]...)
			break
		}
		dst = append(dst, tmp[i:i+j]...)
		i += j
		var n int
		dst, n = appendAttrEntity(dst, tmp[i:])
		i += n
	}
	return dst, tmp
}

// appendAttrEntity decodes the character reference at the start of s (at
// its '&') in attribute mode, appends it and returns the number of bytes
// it took; a '&' that starts none is appended as is (1 byte).
func appendAttrEntity(dst, s []byte) ([]byte, int) {
	if len(s) <= 1 {
		return append(dst, '&'), 1
	}
	if s[1] == '#' {
		r, n := numericEntity(s)
		if n == 1 {
			return append(dst, '&'), 1
		}
		return utf8.AppendRune(dst, r), n
	}
	i := 1
	for i < len(s) {
		c := s[i]
		i++
		if isLetter(c) || '0' <= c && c <= '9' {
			continue
		}
		if c != ';' {
			i--
		}
		break
	}
	name := s[1:i]
	if len(name) == 0 || name[len(name)-1] != ';' && i < len(s) && s[i] == '=' {
		return append(dst, '&'), 1
	}
	if v, ok := attrEntity(name); ok {
		return append(dst, v...), i
	}
	return append(dst, '&'), 1
}

// numericEntity decodes the numeric reference ("&#65;", "&#x41") at the
// start of s; n is 1 when there is none. The reference's extent is found
// here, its value by html.UnescapeString, which reads numeric references
// alike in text and attribute values (Windows-1252 for 0x80 to 0x9F,
// U+FFFD for 0, surrogates and values past U+10FFFF).
func numericEntity(s []byte) (r rune, n int) {
	i := 2
	hex := len(s) > i && (s[i] == 'x' || s[i] == 'X')
	if hex {
		i++
	}
	i0 := i
	for i < len(s) && (hex && isHexDigit(s[i]) || !hex && '0' <= s[i] && s[i] <= '9') {
		i++
	}
	if i == i0 {
		return '&', 1
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	r, _ = utf8.DecodeRuneInString(html.UnescapeString(string(s[:i])))
	return r, i
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// commonEntities are the named references of URLs and titles, decoded
// without asking the tokenizer (TestCommonEntities checks them against it).
var commonEntities = map[string]string{
	"amp;": "&", "amp": "&", "lt;": "<", "lt": "<", "gt;": ">", "gt": ">",
	"quot;": `"`, "quot": `"`, "apos;": "'", "nbsp;": "\u00a0", "nbsp": "\u00a0",
	"copy;": "©", "copy": "©", "reg;": "®", "reg": "®", "hellip;": "…",
	"mdash;": "—", "ndash;": "–", "laquo;": "«", "raquo;": "»",
}

// attrEntity returns what the named reference name (letters and digits,
// perhaps a ';') stands for in an attribute value: the entity whose name
// is exactly name, if there is one. The table is x/net/html's own, read
// through html.UnescapeString, which decodes in text mode: there, a name
// that is no entity may start with one of the entities written without
// ';' ("&notit;" is "¬it;"), which attribute mode does not do. Such a
// match is told from an exact one by what follows the first rune: the rest
// of the name itself (ASCII, and the end of name), where an exact match
// leaves nothing or the second rune of a two-rune entity (a combining mark,
// or the "j" of "&fjlig;", which is not how that name ends).
// TestAllEntitiesInAttributes checks every name of the table.
func attrEntity(name []byte) (string, bool) {
	if v, ok := commonEntities[string(name)]; ok {
		return v, true
	}
	if len(name) > longestEntity {
		return "", false
	}
	ref := "&" + string(name)
	v := html.UnescapeString(ref)
	if v == ref {
		return "", false
	}
	_, size := utf8.DecodeRuneInString(v)
	if rest := v[size:]; rest != "" && isASCII(rest) && bytes.HasSuffix(name, []byte(rest)) {
		return "", false // a shorter entity followed by the rest of the name
	}
	return v, true
}

// longestEntity is the length of the longest named reference, ';'
// included ("CounterClockwiseContourIntegral;").
const longestEntity = 32
