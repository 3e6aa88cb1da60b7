package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// The limits of the sitemap protocol (sitemaps.org): a file holds at most
// 50,000 URLs and 50 MB (52,428,800 bytes) uncompressed.
const (
	DefaultMaxSize = 50 << 20
	DefaultMaxURLs = 50000
	// MaxLocLength is the longest <loc> kept, in bytes; the protocol asks
	// for less than 2,048 characters. Longer ones are counted as invalid.
	MaxLocLength = 8 << 10
)

var (
	// ErrTooLarge is returned (with the entries read until then) when a
	// sitemap is larger than Limits.MaxSize once decompressed.
	ErrTooLarge = errors.New("sitemap larger than the size limit")
	// ErrMalformed is the kind of error for a file that is not well-formed
	// XML, a corrupt gzip stream, or an empty body; the File returned with
	// it holds the entries read before the problem.
	ErrMalformed = errors.New("malformed sitemap")
	// ErrNotSitemap is returned for well-formed XML whose root is neither
	// <urlset> nor <sitemapindex> (an HTML page, an RSS feed...).
	ErrNotSitemap = errors.New("not a sitemap")
)

// Kind says what a sitemap file lists.
type Kind int

const (
	// URLSet is a <urlset>: pages.
	URLSet Kind = iota + 1
	// Index is a <sitemapindex>: other sitemaps.
	Index
	// Text is a text sitemap: one page URL per line.
	Text
)

func (k Kind) String() string {
	switch k {
	case URLSet:
		return "urlset"
	case Index:
		return "sitemapindex"
	case Text:
		return "text"
	}
	return "unknown"
}

// Entry is a <url> of a urlset, a <sitemap> of an index, or a line of a
// text sitemap.
type Entry struct {
	// Loc is the URL, as written (white space trimmed).
	Loc string
	// LastMod is <lastmod> in W3C datetime form ("2024-05-01",
	// "2024-05-01T10:00:00+02:00"); zero when absent or unreadable.
	LastMod time.Time
	// ChangeFreq is <changefreq> ("daily"...), "" when absent.
	ChangeFreq string
	// Priority is <priority>, 0.5 (the protocol's default) when absent or
	// unreadable.
	Priority float64
	// Alternates are the <xhtml:link rel="alternate"> of the entry: the
	// same page in other languages.
	Alternates []Alternate
}

// Alternate is an alternate-language version of a page.
type Alternate struct {
	HrefLang, Href string
}

// File is a parsed sitemap.
type File struct {
	Kind    Kind
	Entries []Entry
	// Truncated reports that the file held more than Limits.MaxURLs
	// entries: the first MaxURLs are in Entries, the rest were not read.
	Truncated bool
	// Invalid counts entries dropped: without <loc>, a <loc> longer than
	// MaxLocLength, or (text sitemaps) a line that is not an http(s) URL.
	Invalid int
}

// Limits bound what one sitemap file may cost.
type Limits struct {
	// MaxSize is the most bytes read after decompression; 0 means
	// DefaultMaxSize.
	MaxSize int64
	// MaxURLs is the most entries kept; 0 means DefaultMaxURLs.
	MaxURLs int
}

func (l Limits) withDefaults() Limits {
	if l.MaxSize <= 0 {
		l.MaxSize = DefaultMaxSize
	}
	if l.MaxURLs <= 0 {
		l.MaxURLs = DefaultMaxURLs
	}
	return l
}

// SyntaxError is a malformed sitemap's problem and where it is. It
// matches ErrMalformed with errors.Is.
type SyntaxError struct {
	// Line is the line of the decompressed file (1-based), 0 if unknown.
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%v: line %d: %s", ErrMalformed, e.Line, e.Msg)
	}
	return fmt.Sprintf("%v: %s", ErrMalformed, e.Msg)
}

// Is reports target == ErrMalformed.
func (e *SyntaxError) Is(target error) bool { return target == ErrMalformed }

// Parse reads a sitemap: an XML urlset or sitemap index, or a text
// sitemap, each possibly gzip-compressed (detected by its magic bytes, so
// a sitemap.xml.gz served as is and one with Content-Encoding already
// decoded both work). It reads at most lim.MaxSize decompressed bytes and
// keeps at most lim.MaxURLs entries.
//
// Sitemaps are untrusted input, and Parse returns what it could read with
// any error: a *File with the entries before the problem and ErrTooLarge,
// a *SyntaxError (ErrMalformed) or ErrNotSitemap. Broken markup is
// repaired as browsers repair HTML (unclosed and mismatched tags,
// unescaped "&"); a file cut short is an error after its entries. Entities
// are the predefined and HTML ones only (no DTD, no billion laughs).
// Memory holds the entries and at most MaxToken bytes of the file, however
// large it is: a single tag, text or comment longer than that makes the
// file malformed.
func Parse(r io.Reader, lim Limits) (*File, error) {
	lim = lim.withDefaults()
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return &File{}, &SyntaxError{Msg: "gzip: " + err.Error()}
		}
		zr.Multistream(false)
		br = bufio.NewReader(&gzipErrors{zr})
	}
	lr := &limitReader{r: br, left: lim.MaxSize}
	in := bufio.NewReader(lr)
	first, err := firstByte(in)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return &File{}, err
		}
		var se *SyntaxError
		if errors.As(err, &se) {
			return &File{}, err
		}
		return &File{}, &SyntaxError{Msg: "empty file"}
	}
	if first != '<' {
		return parseText(in, lim)
	}
	return parseXML(in, lim)
}

// firstByte returns the first byte of r that is not white space or a
// UTF-8 byte-order mark, leaving it unread.
func firstByte(r *bufio.Reader) (byte, error) {
	if bom, _ := r.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		r.Discard(3)
	}
	for {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, r.UnreadByte()
		}
	}
}

// limitReader reads at most left bytes, then fails with ErrTooLarge if
// there is more.
type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(l.r, one[:]); n > 0 {
			return 0, ErrTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// gzipErrors reports a corrupt gzip stream as a SyntaxError.
type gzipErrors struct{ r io.Reader }

func (g *gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = &SyntaxError{Msg: "gzip: " + err.Error()}
	}
	return n, err
}

// parseText reads a text sitemap: one absolute http(s) URL per line.
func parseText(r *bufio.Reader, lim Limits) (*File, error) {
	f := &File{Kind: Text}
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer is no URL we keep.
			f.Invalid++
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			line = nil
		}
		if s := strings.TrimSpace(string(line)); s != "" {
			if u, perr := url.Parse(s); perr == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && len(s) <= MaxLocLength {
				if len(f.Entries) == lim.MaxURLs {
					f.Truncated = true
					return f, nil
				}
				f.Entries = append(f.Entries, Entry{Loc: s, Priority: 0.5})
			} else {
				f.Invalid++
			}
		}
		if err == io.EOF {
			return f, nil
		}
		if err != nil {
			return f, err
		}
	}
}

// field is the entry child whose text is being read.
type field int

const (
	noField field = iota
	locField
	lastModField
	changeFreqField
	priorityField
)

// MaxToken is the largest single piece of a sitemap (a tag, a run of text,
// a comment) that is read: a larger one makes the file malformed. It
// bounds the memory one file costs, whatever its size once decompressed.
const MaxToken = 256 << 10

// maxNesting is how many open elements are tracked by name; deeper ones,
// which sitemaps never have, are only counted.
const maxNesting = 32

// parseXML reads a urlset or a sitemap index token by token with
// x/net/html's tokenizer, which recovers from broken markup as browsers do
// and buffers at most MaxToken bytes: memory holds the entries and one
// token, never the document.
func parseXML(r *bufio.Reader, lim Limits) (*File, error) {
	f := &File{}
	in, err := decodeCharset(r)
	if err != nil {
		return f, err
	}
	z := html.NewTokenizer(in)
	z.SetMaxBuf(MaxToken)
	z.AllowCDATA(true)
	var (
		open     []string // local names of the open elements, root first
		deep     int      // open elements beyond maxNesting
		entry    Entry
		fld      = noField
		text     []byte
		tooLong  bool
		entryTag string
		lines    = 1
	)
	// closeTo closes the open elements down to n, finishing the field and
	// the entry they hold. It returns false when the entry limit is hit.
	closeTo := func(n int) bool {
		for len(open) > n {
			switch depth := len(open); {
			case depth == 3 && fld != noField:
				setField(&entry, fld, strings.TrimSpace(string(text)))
				fld = noField
			case depth == 2 && open[1] == entryTag:
				loc := entry.Loc
				if loc == "" || tooLong || !cleanLoc(loc) {
					f.Invalid++
				} else {
					if len(f.Entries) == lim.MaxURLs {
						f.Truncated = true
						return false
					}
					f.Entries = append(f.Entries, entry)
				}
			}
			open = open[:len(open)-1]
		}
		return true
	}
	for {
		tt := z.Next()
		lines += bytes.Count(z.Raw(), []byte{'\n'})
		switch tt {
		case html.ErrorToken:
			err := z.Err()
			switch {
			case err == io.EOF:
				if f.Kind == 0 {
					return f, &SyntaxError{Line: lines, Msg: "no <urlset> or <sitemapindex> element"}
				}
				if len(open) > 0 {
					// The entry being read may be cut: it is dropped.
					return f, &SyntaxError{Line: lines, Msg: "unexpected end of file (the file is cut short)"}
				}
				return f, nil
			case errors.Is(err, html.ErrBufferExceeded):
				return f, &SyntaxError{Line: lines, Msg: fmt.Sprintf("a tag, text or comment longer than %d bytes", MaxToken)}
			case errors.Is(err, ErrTooLarge):
				return f, ErrTooLarge
			}
			var se *SyntaxError
			if errors.As(err, &se) { // from the gzip stream
				return f, err
			}
			return f, &SyntaxError{Line: lines, Msg: err.Error()}
		case html.StartTagToken, html.SelfClosingTagToken:
			raw, hasAttr := z.TagName()
			name := localName(raw)
			if len(open) == 0 && f.Kind != 0 {
				continue // after the root: ignored
			}
			switch len(open) {
			case 0:
				switch name {
				case "urlset":
					f.Kind, entryTag = URLSet, "url"
				case "sitemapindex":
					f.Kind, entryTag = Index, "sitemap"
				default:
					return f, fmt.Errorf("%w: the root element is <%.40s>, not <urlset> or <sitemapindex>", ErrNotSitemap, raw)
				}
			case 1:
				if name == entryTag {
					entry, tooLong = Entry{Priority: 0.5}, false
				}
			case 2:
				if open[1] != entryTag {
					break
				}
				fld, text = noField, text[:0]
				switch name {
				case "loc":
					fld = locField
				case "lastmod":
					fld = lastModField
				case "changefreq":
					fld = changeFreqField
				case "priority":
					fld = priorityField
				case "link":
					if a, ok := alternate(z, hasAttr); ok {
						entry.Alternates = append(entry.Alternates, a)
					}
				}
			}
			if tt == html.SelfClosingTagToken || name == "link" { // <xhtml:link> has no content
				if len(open) == 2 && fld != noField {
					fld = noField
				}
				continue
			}
			if len(open) < maxNesting {
				open = append(open, name)
			} else {
				deep++
			}
		case html.EndTagToken:
			if deep > 0 {
				deep--
				continue
			}
			raw, _ := z.TagName()
			name := localName(raw)
			for i := len(open) - 1; i >= 0; i-- {
				if open[i] == name {
					if !closeTo(i) {
						return f, nil
					}
					break
				}
			}
		case html.TextToken:
			if fld != noField && len(open) == 3 {
				t := z.Text()
				if len(text)+len(t) > MaxLocLength {
					tooLong = tooLong || fld == locField
					continue
				}
				text = append(text, t...)
			}
		}
	}
}

// decodeCharset converts r to UTF-8 when its XML declaration names another
// encoding (sitemaps must be UTF-8, some are ISO-8859-1).
func decodeCharset(r *bufio.Reader) (io.Reader, error) {
	head, _ := r.Peek(1024)
	if !bytes.HasPrefix(head, []byte("<?xml")) {
		return r, nil
	}
	decl := head
	if end := bytes.Index(head, []byte("?>")); end >= 0 {
		decl = head[:end]
	}
	m := encodingDecl.FindSubmatch(decl)
	if m == nil {
		return r, nil
	}
	label := strings.ToLower(string(m[1]))
	if label == "utf-8" || label == "utf8" {
		return r, nil
	}
	cr, err := charset.NewReaderLabel(label, r)
	if err != nil {
		return nil, &SyntaxError{Line: 1, Msg: fmt.Sprintf("unsupported encoding %q", label)}
	}
	return cr, nil
}

var encodingDecl = regexp.MustCompile(`encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']`)

// knownNames are the elements a sitemap is read by.
var knownNames = []string{"urlset", "sitemapindex", "url", "sitemap", "loc", "lastmod", "changefreq", "priority", "link"}

// localName returns the element's name without namespace prefix
// ("xhtml:link" -> "link") if it is one of knownNames, and "*" for any
// other: no allocation per tag, however many tags a file has.
func localName(name []byte) string {
	if i := bytes.LastIndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	for _, k := range knownNames {
		if string(name) == k {
			return k
		}
	}
	return "*"
}

// cleanLoc reports whether loc is valid UTF-8 without control characters.
func cleanLoc(loc string) bool {
	if !utf8.ValidString(loc) {
		return false
	}
	for _, r := range loc {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// alternate reads <xhtml:link rel="alternate" hreflang="fr" href="...">.
func alternate(z *html.Tokenizer, hasAttr bool) (Alternate, bool) {
	var a Alternate
	alt := false
	for hasAttr {
		var k, v []byte
		k, v, hasAttr = z.TagAttr()
		switch string(k) {
		case "rel":
			alt = strings.EqualFold(strings.TrimSpace(string(v)), "alternate")
		case "hreflang":
			a.HrefLang = strings.TrimSpace(string(v))
		case "href":
			a.Href = strings.TrimSpace(string(v))
		}
	}
	return a, alt && a.Href != "" && len(a.Href) <= MaxLocLength && cleanLoc(a.Href)
}

func setField(e *Entry, f field, v string) {
	switch f {
	case locField:
		e.Loc = v
	case lastModField:
		e.LastMod, _ = ParseLastMod(v)
	case changeFreqField:
		e.ChangeFreq = strings.ToLower(v)
	case priorityField:
		if p, err := strconv.ParseFloat(v, 64); err == nil && p >= 0 && p <= 1 {
			e.Priority = p
		}
	}
}

// lastModLayouts are the W3C datetime forms the protocol allows, most
// precise first, and two common variants (no colon in the offset, a space
// instead of the T).
var lastModLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02",
	"2006-01",
	"2006",
}

// ParseLastMod parses a <lastmod> value in W3C datetime form: a year, a
// month, a day, or a time with minutes, seconds or fractions and a zone
// ("Z", "+02:00"). Times without a zone are taken as UTC.
func ParseLastMod(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range lastModLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("sitemap: lastmod %q is not a W3C datetime (2024-05-01 or 2024-05-01T10:00:00+02:00)", s)
}
