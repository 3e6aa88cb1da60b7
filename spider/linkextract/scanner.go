package linkextract

import (
	"bytes"
)

// The scanner below is the HTML5 tokenizer of golang.org/x/net/html
// (Tokenizer.Next and the states it calls), rewritten to read a page held
// in memory: it works on the body itself (no copy into a buffer of its own,
// no byte-at-a-time reads through a reader) and jumps with bytes.IndexByte
// through the runs of bytes whose states look for one byte only (text up
// to the next '<', quoted attribute values, bogus comments up to '>').
// Every state follows x/net/html's code, its odd corners included, so that
// ScanDocument finds exactly the tags, attributes and text the tokenizer
// returns: FuzzScanMatchesTokenizer holds the two to the same output.
// Comments and doctypes are consumed but not decoded (nobody reads them),
// and CDATA sections are bogus comments, as in a Tokenizer whose
// AllowCDATA was not called.

// tokenKind is the kind of a token, as html.TokenType.
type tokenKind uint8

const (
	tokError tokenKind = iota // the end of the page
	tokText
	tokStartTag
	tokEndTag
	tokSelfClosingTag
	tokComment
	tokDoctype
)

// span is a range of the page, start inclusive, end exclusive.
type span struct{ start, end int }

// manyAttrs is the number of attributes of a tag beyond which the scanner
// looks for duplicate names in a map rather than among the names kept.
const manyAttrs = 16

// scanner is the tokenizer's state over the page b.
type scanner struct {
	b []byte
	// start is where the current token begins, p where reading is (the
	// tokenizer's raw.start and raw.end); eof is set once a read found the
	// page's end (the tokenizer's err).
	start, p int
	eof      bool
	// data is the current token's text or tag name.
	data span
	// attr are the current start tag's attributes (key and value, raw),
	// the first of each name only; pending is the one being read; names
	// holds the lower-cased names of attr once there are manyAttrs.
	attr    [][2]span
	pending [2]span
	names   map[string]struct{}
	// rawTag is the name of the raw-text or RCDATA element whose text comes
	// next ("script", "title", ...), "" for none.
	rawTag string
	// textIsRaw: the current text token's entities are not decoded;
	// convertNUL: its NUL bytes become U+FFFD.
	textIsRaw, convertNUL bool
	// work counts tokens and the names compared in looking for duplicate
	// attributes: what grows faster than the page if anything does
	// (TestScanHostileLinear).
	work int
}

// readByte returns the next byte, or 0 and sets eof at the end of the page.
func (z *scanner) readByte() byte {
	if z.p >= len(z.b) {
		z.eof = true
		return 0
	}
	c := z.b[z.p]
	z.p++
	return c
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// skipWhiteSpace skips white space.
func (z *scanner) skipWhiteSpace() {
	if z.eof {
		return
	}
	for z.p < len(z.b) {
		if !isSpace(z.b[z.p]) {
			return
		}
		z.p++
	}
	z.eof = true
}

// skipTo moves past the next c, or to the end of the page (eof) when there
// is none; it reports whether it found c.
func (z *scanner) skipTo(c byte) bool {
	i := bytes.IndexByte(z.b[z.p:], c)
	if i < 0 {
		z.p = len(z.b)
		z.eof = true
		return false
	}
	z.p += i + 1
	return true
}

// next scans the next token and returns its kind (Tokenizer.Next).
func (z *scanner) next() tokenKind {
	z.start = z.p
	z.data = span{z.p, z.p}
	z.work++
	if z.eof {
		return tokError
	}
	if z.rawTag != "" {
		if z.rawTag == "plaintext" {
			z.p, z.eof = len(z.b), true
			z.data.end = z.p
			z.textIsRaw = true
		} else {
			z.readRawOrRCDATA()
		}
		if z.data.end > z.data.start {
			z.convertNUL = true
			return tokText
		}
	}
	z.textIsRaw, z.convertNUL = false, false
	for {
		if !z.skipTo('<') {
			break
		}
		c := z.readByte()
		if z.eof {
			break
		}
		var kind tokenKind
		switch {
		case isLetter(c):
			kind = tokStartTag
		case c == '/':
			kind = tokEndTag
		case c == '!' || c == '?':
			kind = tokComment
		default:
			z.p-- // reconsume: the '<' is text
			continue
		}
		// Text read before the tag is a token of its own, returned first.
		if x := z.p - len("<a"); z.start < x {
			z.p = x
			z.data.end = x
			return tokText
		}
		switch kind {
		case tokStartTag:
			return z.readStartTag()
		case tokEndTag:
			c = z.readByte()
			if z.eof {
				return z.trailingText()
			}
			if c == '>' {
				return tokComment // "</>" is no token; the tokenizer says comment
			}
			if isLetter(c) {
				z.readTag(false)
				if z.eof {
					return tokError
				}
				return tokEndTag
			}
			z.p--
			z.readUntilCloseAngle()
			return tokComment
		default: // tokComment
			if c == '!' {
				return z.readMarkupDeclaration()
			}
			z.p--
			z.readUntilCloseAngle()
			return tokComment
		}
	}
	return z.trailingText()
}

// trailingText returns what was read since the token's start, at the end
// of the page, as text (or the end itself when nothing was read).
func (z *scanner) trailingText() tokenKind {
	if z.start < z.p {
		z.data.end = z.p
		return tokText
	}
	return tokError
}

// readRawOrRCDATA reads up to the "</name" that closes rawTag
// (readRawOrRCDATA of the tokenizer).
func (z *scanner) readRawOrRCDATA() {
	if z.rawTag == "script" {
		z.readScript()
		z.data.end = z.p
		z.textIsRaw = true
		z.rawTag = ""
		return
	}
	for z.skipTo('<') {
		if z.p >= len(z.b) {
			z.eof = true
			break
		}
		if z.b[z.p] != '/' {
			continue
		}
		z.p++
		if z.readRawEndTag() || z.eof {
			break
		}
	}
	z.data.end = z.p
	// A textarea's or title's RCDATA decodes entities.
	z.textIsRaw = z.rawTag != "textarea" && z.rawTag != "title"
	z.rawTag = ""
}

// readRawEndTag reads the rest of "</name" for name rawTag, followed by a
// white space, '/' or '>'. On success it moves back before the "</" and
// returns true; otherwise it leaves the byte that did not match unread.
func (z *scanner) readRawEndTag() bool {
	for i := 0; i < len(z.rawTag); i++ {
		c := z.readByte()
		if z.eof {
			return false
		}
		if c != z.rawTag[i] && c != z.rawTag[i]-('a'-'A') {
			z.p--
			return false
		}
	}
	c := z.readByte()
	if z.eof {
		return false
	}
	switch c {
	case ' ', '\n', '\r', '\t', '\f', '/', '>':
		z.p -= 3 + len(z.rawTag) // "</", the name and c
		return true
	}
	z.p--
	return false
}

// readUntilCloseAngle reads through the next '>' (or to the end).
func (z *scanner) readUntilCloseAngle() {
	z.data.start = z.p
	if z.skipTo('>') {
		z.data.end = z.p - 1
	} else {
		z.data.end = z.p
	}
}

// readMarkupDeclaration reads a token starting with "<!": a comment, a
// doctype or a bogus comment. Their text is not kept.
func (z *scanner) readMarkupDeclaration() tokenKind {
	z.data.start = z.p
	var c [2]byte
	for i := range c {
		c[i] = z.readByte()
		if z.eof {
			return tokComment
		}
	}
	if c[0] == '-' && c[1] == '-' {
		z.readComment()
		return tokComment
	}
	z.p -= 2
	if z.readDoctype() {
		return tokDoctype
	}
	z.readUntilCloseAngle() // bogus comment (CDATA included)
	return tokComment
}

// readDoctype reads "DOCTYPE" (any case) and what follows up to '>'; it
// returns false, having read nothing, when the token is not a doctype.
func (z *scanner) readDoctype() bool {
	const s = "DOCTYPE"
	for i := 0; i < len(s); i++ {
		c := z.readByte()
		if z.eof {
			// The tokenizer backs up and reads the rest as a bogus comment.
			z.p, z.eof = z.data.start, false
			return false
		}
		if c != s[i] && c != s[i]+('a'-'A') {
			z.p = z.data.start
			return false
		}
	}
	if z.skipWhiteSpace(); z.eof {
		return true
	}
	z.readUntilCloseAngle()
	return true
}

// readComment reads a comment after its "<!--": through "-->", "--!>",
// the '>' of "<!-->" and "<!--->", or to the end.
func (z *scanner) readComment() {
	dashes := 0
	beginning := true
	for {
		c := z.readByte()
		if z.eof {
			return
		}
		switch c {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return
			}
		case '!':
			if dashes >= 2 {
				c = z.readByte()
				if z.eof || c == '>' {
					return
				}
				if c == '-' {
					dashes = 1
					beginning = false
					continue
				}
			}
		}
		dashes = 0
		beginning = false
	}
}

// readStartTag reads a start tag whose "<x" has been read and returns
// tokStartTag, tokSelfClosingTag, or tokError at the end of the page.
func (z *scanner) readStartTag() tokenKind {
	z.readTag(true)
	if z.eof {
		return tokError
	}
	// These elements make the next token raw text (or RCDATA), whether
	// their tag closes itself or not.
	z.rawTag = rawTextElement(z.b[z.data.start:z.data.end])
	// Self-closing: a '/' before the '>' that is not the last byte of an
	// unquoted value (<p a=/>).
	n := len(z.attr)
	if z.b[z.p-2] == '/' && (n == 0 || z.p-2 != z.attr[n-1][1].end-1) {
		return tokSelfClosingTag
	}
	return tokStartTag
}

// rawTextElement returns the name of the element, lower-cased, when the
// tag name (any case) is one whose start tag makes the next token raw text
// (RCDATA for title and textarea), "" otherwise.
func rawTextElement(name []byte) string {
	if len(name) < 3 || len(name) > 9 {
		return ""
	}
	var cands []string
	switch name[0] | 0x20 {
	case 'i':
		cands = []string{"iframe"}
	case 'n':
		cands = []string{"noembed", "noframes", "noscript"}
	case 'p':
		cands = []string{"plaintext"}
	case 's':
		cands = []string{"script", "style"}
	case 't':
		cands = []string{"textarea", "title"}
	case 'x':
		cands = []string{"xmp"}
	}
	for _, s := range cands {
		if asciiEqualFold(name, s) {
			return s
		}
	}
	return ""
}

// asciiEqualFold reports whether b and s are equal with ASCII letters
// folded to lower case (as the tokenizer's lower does).
func asciiEqualFold[T string | []byte](b []byte, s T) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// readTag reads a tag's name and attributes, after its "<x" or "</x".
// Attributes are kept when save is set, the first of each name only.
func (z *scanner) readTag(save bool) {
	z.attr = z.attr[:0]
	if len(z.names) > 0 {
		clear(z.names)
	}
	z.readTagName()
	if z.skipWhiteSpace(); z.eof {
		return
	}
	for {
		c := z.readByte()
		if z.eof || c == '>' {
			break
		}
		z.p--
		z.readTagAttrKey()
		z.readTagAttrVal()
		if save && z.pending[0].start != z.pending[0].end && !z.seen(z.pending[0]) {
			z.attr = append(z.attr, z.pending)
		}
		if z.skipWhiteSpace(); z.eof {
			break
		}
	}
}

// seen reports whether an attribute named k (any case) is kept already;
// when it is not, the caller keeps it.
func (z *scanner) seen(k span) bool {
	key := z.b[k.start:k.end]
	if len(z.attr) < manyAttrs {
		z.work += len(z.attr)
		for _, a := range z.attr {
			if asciiEqualFold(z.b[a[0].start:a[0].end], key) {
				return true
			}
		}
		return false
	}
	if z.names == nil {
		z.names = make(map[string]struct{}, 2*manyAttrs)
	}
	if len(z.names) == 0 {
		for _, a := range z.attr {
			z.names[string(lowerASCII(z.b[a[0].start:a[0].end]))] = struct{}{}
		}
	}
	z.work++
	s := string(lowerASCII(key))
	if _, ok := z.names[s]; ok {
		return true
	}
	z.names[s] = struct{}{}
	return false
}

// lowerASCII returns a lower-cased copy of b.
func lowerASCII(b []byte) []byte { return lowerASCIIInto(make([]byte, len(b)), b) }

// lowerASCIIInto writes src with ASCII letters lower-cased to dst, which
// has src's length (it may be src itself), and returns dst.
func lowerASCIIInto(dst, src []byte) []byte {
	for i, c := range src {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}

// readTagName sets data to the tag's name; its first byte has been read.
func (z *scanner) readTagName() {
	z.data.start = z.p - 1
	for z.p < len(z.b) {
		c := z.b[z.p]
		z.p++
		switch c {
		case ' ', '\n', '\r', '\t', '\f':
			z.data.end = z.p - 1
			return
		case '/', '>':
			z.p--
			z.data.end = z.p
			return
		}
	}
	z.eof = true
	z.data.end = z.p
}

// readTagAttrKey sets pending[0] to an attribute's name.
func (z *scanner) readTagAttrKey() {
	z.pending[0].start = z.p
	for z.p < len(z.b) {
		c := z.b[z.p]
		z.p++
		switch c {
		case '=':
			if z.pending[0].start+1 == z.p {
				continue // a '=' first is part of the name
			}
			z.p--
			z.pending[0].end = z.p
			return
		case ' ', '\n', '\r', '\t', '\f', '/', '>':
			z.p--
			z.pending[0].end = z.p
			return
		}
	}
	z.eof = true
	z.pending[0].end = z.p
}

// readTagAttrVal sets pending[1] to an attribute's value, "" when it has
// none.
func (z *scanner) readTagAttrVal() {
	z.pending[1] = span{z.p, z.p}
	if z.skipWhiteSpace(); z.eof {
		return
	}
	c := z.readByte()
	if z.eof || c == '/' {
		return
	}
	if c != '=' {
		z.p--
		return
	}
	if z.skipWhiteSpace(); z.eof {
		return
	}
	quote := z.readByte()
	if z.eof {
		return
	}
	switch quote {
	case '>':
		z.p--
	case '\'', '"':
		z.pending[1].start = z.p
		if z.skipTo(quote) {
			z.pending[1].end = z.p - 1
		} else {
			z.pending[1].end = z.p
		}
	default:
		z.pending[1].start = z.p - 1
		for z.p < len(z.b) {
			c := z.b[z.p]
			z.p++
			switch c {
			case ' ', '\n', '\r', '\t', '\f':
				z.pending[1].end = z.p - 1
				return
			case '>':
				z.p--
				z.pending[1].end = z.p
				return
			}
		}
		z.eof = true
		z.pending[1].end = z.p
	}
}
