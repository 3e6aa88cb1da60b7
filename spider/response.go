package spider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"

	"github.com/gocrawl/gocrawl/spider/linkextract"
)

// ErrNotHTML is returned by Response.Doc for bodies that are not HTML or
// XML (images, JSON, PDFs...).
var ErrNotHTML = errors.New("response is not HTML")

// Response is a downloaded page, handed to callbacks.
//
// The parsed document and decoded text are computed on first use and
// cached; a Response is safe for concurrent use by one callback's goroutines.
type Response struct {
	// URL is the final URL, after redirects.
	URL *url.URL
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers.
	Header http.Header
	// Body is the raw body, decompressed.
	Body []byte
	// Request is the request that produced this response (for redirects,
	// the last request of the chain).
	Request *Request
	// Protocol is the HTTP protocol, e.g. "HTTP/1.1" or "HTTP/2.0".
	Protocol string
	// Flags mark special responses: "cached" (from the HTTP cache),
	// "truncated" (allowed data loss), "rendered" (the DOM of a page
	// rendered in headless Chromium, package render).
	Flags []string
	// IP is the remote address the response came from, when known.
	IP string
	// Screenshot is a PNG screenshot of a rendered page, when the request
	// asked for one (RENDER_SCREENSHOT, the render_screenshot meta).
	Screenshot []byte
	// Change is what this response tells of the page compared with its
	// last visit: ChangeNew, ChangeChanged, ChangeUnchanged, ChangeGone,
	// or "" when the crawl keeps no recrawl records (docs/recrawl.md).
	Change string

	encOnce  sync.Once
	enc      encoding.Encoding
	encName  string
	textOnce sync.Once
	text     string
	textErr  error
	docOnce  sync.Once
	doc      *goquery.Document
	docErr   error
	baseOnce sync.Once
	baseURL  *url.URL
	ldocOnce sync.Once
	ldoc     *linkextract.Document
	// parsed is set once Doc has parsed the body; sdoc is the scan of the
	// body (linkextract.ScanDocument) when links were needed before that.
	parsed   atomic.Bool
	sdocOnce sync.Once
	sdoc     *linkextract.Document
	sdocErr  error
}

// encoding determines (once) the body's character encoding.
func (r *Response) encoding() (encoding.Encoding, string) {
	r.encOnce.Do(func() {
		ct := r.Header.Get("Content-Type")
		if declaresUTF8(ct) && !bytes.HasPrefix(r.Body, bomUTF16BE) && !bytes.HasPrefix(r.Body, bomUTF16LE) {
			// What DetermineEncoding answers for the most common header,
			// without parsing it into a map (mime.ParseMediaType).
			r.enc, r.encName = utf8Encoding, "utf-8"
			return
		}
		r.enc, r.encName, _ = charset.DetermineEncoding(r.Body, ct)
	})
	return r.enc, r.encName
}

var utf8BOM = []byte("\xef\xbb\xbf")

// The byte-order marks that make DetermineEncoding overrule a header.
var (
	bomUTF16BE = []byte("\xfe\xff")
	bomUTF16LE = []byte("\xff\xfe")
)

var utf8Encoding, _ = charset.Lookup("utf-8")

// declaresUTF8 reports whether ct is exactly an HTML media type with the
// parameter charset=utf-8 (any case, optional quotes), the header most
// servers send.
func declaresUTF8(ct string) bool {
	mt, param, ok := strings.Cut(ct, ";")
	if !ok || !strings.EqualFold(strings.TrimSpace(mt), "text/html") {
		return false
	}
	name, val, ok := strings.Cut(strings.TrimSpace(param), "=")
	if !ok || !strings.EqualFold(name, "charset") {
		return false
	}
	val = strings.TrimSpace(val)
	if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
		val = val[1 : len(val)-1]
	}
	return strings.EqualFold(val, "utf-8")
}

// ContentType returns the media type of the response without parameters,
// lower-cased ("text/html"); when the server sent none, it is sniffed.
func (r *Response) ContentType() string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = http.DetectContentType(r.Body)
	}
	// What mime.ParseMediaType returns as the media type, valid or not,
	// without parsing the parameters into a map.
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// IsHTML reports whether the body is HTML or XML (XHTML, RSS, sitemaps).
func (r *Response) IsHTML() bool {
	ct := r.ContentType()
	switch {
	case ct == "text/html", ct == "application/xhtml+xml", ct == "text/xml", ct == "application/xml",
		strings.HasSuffix(ct, "+xml"):
		return true
	case ct == "text/plain" || ct == "application/octet-stream":
		// Mislabelled HTML is common; trust the body.
		sniff := http.DetectContentType(r.Body)
		return strings.HasPrefix(sniff, "text/html") || strings.HasPrefix(sniff, "text/xml")
	}
	return false
}

// Text returns the body decoded to UTF-8, using the charset from the
// Content-Type header, a <meta charset> tag or a byte-order mark, in that
// order (WHATWG rules), defaulting to UTF-8 for text and windows-1252 for
// legacy HTML without a declaration.
func (r *Response) Text() (string, error) {
	r.textOnce.Do(func() {
		enc, name := r.encoding()
		if name == "utf-8" || enc == nil {
			body := bytes.TrimPrefix(r.Body, utf8BOM)
			r.text = string(bytes.ToValidUTF8(body, []byte("\uFFFD")))
			return
		}
		b, err := io.ReadAll(enc.NewDecoder().Reader(bytes.NewReader(r.Body)))
		if err != nil {
			r.textErr = fmt.Errorf("decoding %s body of %s: %w", name, r.URL, err)
			return
		}
		r.text = string(b)
	})
	return r.text, r.textErr
}

// Doc returns the body parsed as an HTML document for CSS selection with
// goquery. It returns an error wrapping ErrNotHTML when the response is not
// HTML or XML; it never panics.
func (r *Response) Doc() (*goquery.Document, error) {
	r.docOnce.Do(func() {
		if !r.IsHTML() {
			r.docErr = fmt.Errorf("%w: %s is %s", ErrNotHTML, r.URL, r.ContentType())
			return
		}
		var src io.Reader
		if enc, name := r.encoding(); (name == "utf-8" || enc == nil) && utf8.Valid(r.Body) {
			// The common case: parse the body as is, without a copy.
			src = bytes.NewReader(bytes.TrimPrefix(r.Body, utf8BOM))
		} else {
			text, err := r.Text()
			if err != nil {
				r.docErr = err
				return
			}
			src = strings.NewReader(text)
		}
		doc, err := goquery.NewDocumentFromReader(src)
		if err != nil {
			r.docErr = fmt.Errorf("parsing %s: %w", r.URL, err)
			return
		}
		doc.Url = r.URL
		r.doc = doc
		r.parsed.Store(true)
	})
	return r.doc, r.docErr
}

// LinkDocument returns the parsed document prepared for link extraction
// (see package linkextract): computed once, on first use, and shared by
// every extractor run on this response, so several extractors (the rules
// of a CrawlSpider) walk the document and resolve each link once. It
// returns Doc's error for a response that is not HTML.
func (r *Response) LinkDocument() (*linkextract.Document, error) {
	doc, err := r.Doc()
	if err != nil {
		return nil, err
	}
	r.ldocOnce.Do(func() {
		var root *html.Node
		if len(doc.Nodes) > 0 {
			root = doc.Nodes[0]
		}
		r.ldoc = linkextract.NewDocument(root, r.URL)
	})
	return r.ldoc, nil
}

// scanDocument returns a Document for link extraction without parsing the
// page into a tree when it can: the tree's (LinkDocument) once Doc has
// parsed the page, else a streaming scan of the body
// (linkextract.ScanDocument), computed once. Bodies that need decoding
// (see plainText) go through Doc. Its error is Doc's.
func (r *Response) scanDocument() (*linkextract.Document, error) {
	if r.parsed.Load() {
		return r.LinkDocument()
	}
	r.sdocOnce.Do(func() {
		if !r.IsHTML() {
			_, r.sdocErr = r.Doc()
			return
		}
		if !r.plainText() {
			r.sdoc, r.sdocErr = r.LinkDocument()
			return
		}
		r.sdoc = linkextract.ScanDocument(bytes.TrimPrefix(r.Body, utf8BOM), r.URL)
	})
	return r.sdoc, r.sdocErr
}

// plainText reports whether the body reads the same in UTF-8 as in its
// encoding: valid UTF-8 in UTF-8, or plain ASCII in windows-1252 (what a
// page that declares no charset gets).
func (r *Response) plainText() bool {
	switch enc, name := r.encoding(); {
	case name == "utf-8" || enc == nil:
		return utf8.Valid(r.Body)
	case name == "windows-1252":
		for _, c := range r.Body {
			if c >= utf8.RuneSelf {
				return false
			}
		}
		return true
	}
	return false
}

// Title returns the text of the page's first <title>, white space trimmed
// ("" when it has none). It reads the parsed tree when Doc was called
// before; otherwise it scans the page (linkextract.ScanDocument), without
// building a tree, in the same pass that a CrawlSpider's rules use for
// links (so a callback that needs only the title and the links never pays
// for a parse). It returns Doc's error (wrapping ErrNotHTML) for a
// response that is not HTML.
func (r *Response) Title() (string, error) {
	d, err := r.scanDocument()
	if err != nil {
		return "", err
	}
	return d.Title(), nil
}

// ExtractLinks returns the links ex keeps in this response, in document
// order: absolute http(s) URLs resolved against the page (or its <base
// href>). Follow each with Output.Follow(res, link.URL, cb). It returns
// Doc's error (wrapping ErrNotHTML) for a response that is not HTML.
func (r *Response) ExtractLinks(ex *linkextract.Extractor) ([]linkextract.Link, error) {
	doc, err := r.LinkDocument()
	if err != nil {
		return nil, err
	}
	return ex.Links(doc), nil
}

// Find is a shortcut for Doc().Find(selector); on a non-HTML response, or
// for a selector that does not compile, it returns an empty selection.
// The selector is compiled once and kept for the next pages (up to a
// thousand distinct selectors); goquery's own Find compiles it on every
// call.
func (r *Response) Find(selector string) *goquery.Selection {
	doc, err := r.Doc()
	if err != nil {
		return &goquery.Selection{}
	}
	m, ok := compiledSelector(selector)
	if !ok {
		return doc.Find(selector) // goquery's empty selection for an invalid one
	}
	return doc.FindMatcher(m)
}

// JSON decodes the body into v.
func (r *Response) JSON(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("decoding JSON from %s: %w", r.URL, err)
	}
	return nil
}

// base returns the URL that relative links resolve against: the document's
// <base href> when present, else the response URL. It is computed once.
func (r *Response) base() *url.URL {
	r.baseOnce.Do(func() {
		r.baseURL = r.URL
		if doc, err := r.Doc(); err == nil {
			if href, ok := doc.FindMatcher(baseHref).First().Attr("href"); ok {
				if b, err := r.URL.Parse(strings.TrimSpace(href)); err == nil {
					r.baseURL = b
				}
			}
		}
	})
	return r.baseURL
}

var baseHref = goquery.Single("base[href]")

// URLJoin resolves ref against the response's URL (honouring <base href>)
// and returns the absolute URL without its fragment.
func (r *Response) URLJoin(ref string) (string, error) {
	u, err := r.join(ref)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

func (r *Response) join(ref string) (*url.URL, error) {
	u, err := r.base().Parse(strings.TrimSpace(ref))
	if err != nil {
		return nil, fmt.Errorf("%w %q on %s: %v", ErrInvalidURL, ref, r.URL, err)
	}
	u.Fragment = ""
	u.RawFragment = ""
	return u, nil
}

// NewRequest returns a request for ref resolved against the response URL
// (honouring <base href>), one level deeper than the response's request,
// for a callback that sets more than the URL and the callback (Meta,
// Priority, a method) before sending it with Output.Request. Links with
// other schemes (mailto:, javascript:) give an error wrapping
// ErrInvalidURL. Output.Follow is this and Output.Request in one call.
func (r *Response) NewRequest(ref string, cb Callback) (*Request, error) {
	u, err := r.join(ref)
	if err != nil {
		return nil, err
	}
	if err := checkURL(u, ref); err != nil {
		return nil, err
	}
	req := &Request{URL: u, Callback: cb}
	if r.Request != nil {
		req.Depth = r.Request.Depth + 1
	}
	return req, nil
}

// Hrefs returns the link of every element of sel, in order: its href
// attribute or, without one, its src attribute; elements with neither are
// skipped. These are the links Output.FollowAll follows.
func Hrefs(sel *goquery.Selection) []string {
	if sel == nil {
		return nil
	}
	links := make([]string, 0, sel.Length())
	for _, n := range sel.Nodes {
		if h, ok := nodeHref(n); ok {
			links = append(links, h)
		}
	}
	return links
}

// nodeHref returns n's href attribute or, without one, its src.
func nodeHref(n *html.Node) (string, bool) {
	src, hasSrc := "", false
	for _, a := range n.Attr {
		switch a.Key {
		case "href":
			return a.Val, true
		case "src":
			if !hasSrc {
				src, hasSrc = a.Val, true
			}
		}
	}
	return src, hasSrc
}
