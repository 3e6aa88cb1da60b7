package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
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
	// ErrMalformed is the kind of error for a file cut short, with a tag,
	// text or comment longer than MaxToken, a corrupt gzip stream, or an
	// empty body; the File returned with it holds the entries read before
	// the problem. Broken markup a browser would repair is repaired, not
	// reported.
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
