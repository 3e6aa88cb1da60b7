package sitemap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// This file reads XML sitemaps (urlset and sitemapindex); parse.go has the
// types, Parse and text sitemaps.

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
