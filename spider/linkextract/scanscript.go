package linkextract

// readScript reads a <script>'s text up to the "</script" that closes it,
// through the escaped states of the HTML5 tokenizer ("<!--" then
// "<script>" hides a "</script>" until "-->"), as x/net/html's
// readScript does: each label is one of its states. z.rawTag is "script".
func (z *scanner) readScript() {
	var c byte

scriptData:
	if !z.skipTo('<') {
		return
	}
	goto scriptDataLessThanSign

scriptDataLessThanSign:
	c = z.readByte()
	if z.eof {
		return
	}
	switch c {
	case '/':
		goto scriptDataEndTagOpen
	case '!':
		goto scriptDataEscapeStart
	}
	z.p--
	goto scriptData

scriptDataEndTagOpen:
	if z.readRawEndTag() || z.eof {
		return
	}
	goto scriptData

scriptDataEscapeStart:
	c = z.readByte()
	if z.eof {
		return
	}
	if c == '-' {
		goto scriptDataEscapeStartDash
	}
	z.p--
	goto scriptData

scriptDataEscapeStartDash:
	c = z.readByte()
	if z.eof {
		return
	}
	if c == '-' {
		goto scriptDataEscapedDashDash
	}
	z.p--
	goto scriptData

scriptDataEscaped:
	c = z.readByte()
	if z.eof {
		return
	}
	switch c {
	case '-':
		goto scriptDataEscapedDash
	case '<':
		goto scriptDataEscapedLessThanSign
	}
	goto scriptDataEscaped

scriptDataEscapedDash:
	c = z.readByte()
	if z.eof {
		return
	}
	switch c {
	case '-':
		goto scriptDataEscapedDashDash
	case '<':
		goto scriptDataEscapedLessThanSign
	}
	goto scriptDataEscaped

scriptDataEscapedDashDash:
	c = z.readByte()
	if z.eof {
		return
	}
	switch c {
	case '-':
		goto scriptDataEscapedDashDash
	case '<':
		goto scriptDataEscapedLessThanSign
	case '>':
		goto scriptData
	}
	goto scriptDataEscaped

scriptDataEscapedLessThanSign:
	c = z.readByte()
	if z.eof {
		return
	}
	if c == '/' {
		goto scriptDataEscapedEndTagOpen
	}
	if isLetter(c) {
		goto scriptDataDoubleEscapeStart
	}
	z.p--
	goto scriptData

scriptDataEscapedEndTagOpen:
	if z.readRawEndTag() || z.eof {
		return
	}
	goto scriptDataEscaped

scriptDataDoubleEscapeStart:
	z.p--
	for i := 0; i < len("script"); i++ {
		c = z.readByte()
		if z.eof {
			return
		}
		if c != "script"[i] && c != "SCRIPT"[i] {
			z.p--
			goto scriptDataEscaped
		}
	}
	c = z.readByte()
	if z.eof {
		return
	}
	switch c {
	case ' ', '\n', '\r', '\t', '\f', '/', '>':
		goto scriptDataDoubleEscaped
	}
	z.p--
	goto scriptDataEscaped

scriptDataDoubleEscaped:
	c = z.readByte()
	if z.eof {
		return
	}
	switch c {
	case '-':
		goto scriptDataDoubleEscapedDash
	case '<':
		goto scriptDataDoubleEscapedLessThanSign
	}
	goto scriptDataDoubleEscaped

scriptDataDoubleEscapedDash:
	c = z.readByte()
	if z.eof {
		return
	}
	switch c {
	case '-':
		goto scriptDataDoubleEscapedDashDash
	case '<':
		goto scriptDataDoubleEscapedLessThanSign
	}
	goto scriptDataDoubleEscaped

scriptDataDoubleEscapedDashDash:
	c = z.readByte()
	if z.eof {
		return
	}
	switch c {
	case '-':
		goto scriptDataDoubleEscapedDashDash
	case '<':
		goto scriptDataDoubleEscapedLessThanSign
	case '>':
		goto scriptData
	}
	goto scriptDataDoubleEscaped

scriptDataDoubleEscapedLessThanSign:
	c = z.readByte()
	if z.eof {
		return
	}
	if c == '/' {
		goto scriptDataDoubleEscapeEnd
	}
	z.p--
	goto scriptDataDoubleEscaped

scriptDataDoubleEscapeEnd:
	if z.readRawEndTag() {
		z.p += len("</script>")
		goto scriptDataEscaped
	}
	if z.eof {
		return
	}
	goto scriptDataDoubleEscaped
}
