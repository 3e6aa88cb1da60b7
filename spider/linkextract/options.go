package linkextract

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"github.com/gocrawl/gocrawl/internal/domainset"
)

// Options say which links an Extractor keeps. The zero value keeps every
// http(s) link of <a> and <area> elements whose path does not end in one
// of DefaultDenyExtensions, once each, in document order.
//
// A link is kept when it passes every filter given: its URL matches one of
// Allow (if any) and none of Deny, its host is in AllowDomains (if any) and
// not in DenyDomains, it is on the page's registrable domain when
// SameRegistrableDomain is set, it lies inside RestrictCSS (if any), its
// text matches RestrictText (if any), its path has no denied extension,
// and it is not rel="nofollow" when SkipNoFollow is set.
type Options struct {
	// Allow are regular expressions (RE2 syntax, unanchored) a link's
	// absolute URL must match at least one of; empty keeps every URL.
	Allow []string
	// Deny are regular expressions that drop a link whose URL matches any
	// of them, even if it matches Allow.
	Deny []string
	// AllowDomains keeps only links to these domains or their subdomains
	// ("example.com" keeps www.example.com). A public suffix such as "com"
	// or "co.uk" is an error: it would allow every site under it.
	AllowDomains []string
	// DenyDomains drops links to these domains and their subdomains.
	DenyDomains []string
	// SameRegistrableDomain keeps only links whose registrable domain
	// (from the Public Suffix List: "books.example.co.uk" ->
	// "example.co.uk") is the page's: a site and its subdomains.
	SameRegistrableDomain bool
	// RestrictCSS are CSS selectors of the regions to take links from: a
	// selected element and everything inside it. Empty means the whole
	// document.
	RestrictCSS []string
	// RestrictText are regular expressions a link's text must match one
	// of (the text is only computed when this is set).
	RestrictText []string
	// Tags are the elements whose attributes are read; nil means
	// DefaultTags (a, area). Add "link" for <link href> (rel=next,
	// canonical...), "img" (with Attrs "src") for images. "*" means every
	// element.
	Tags []string
	// Attrs are the attributes read on those elements; nil means
	// DefaultAttrs (href). An element gives one link per attribute it has.
	Attrs []string
	// DenyExtensions drops links whose path ends in one of these
	// extensions (without the dot, case-insensitive; "tar.gz" works). nil
	// means DefaultDenyExtensions; set an empty, non-nil slice to keep
	// every extension.
	DenyExtensions []string
	// Canonicalize writes links in canonical form (see Canonical). Links
	// are compared in that form for uniqueness either way.
	Canonicalize bool
	// AllowDuplicates keeps every occurrence of a link; by default a link
	// appears once, at its first occurrence.
	AllowDuplicates bool
	// SkipNoFollow drops links marked rel="nofollow", and every link of a
	// page whose <meta name="robots"> says nofollow. By default they are
	// kept, with Link.NoFollow set.
	SkipNoFollow bool
	// ProcessValue, if set, rewrites each attribute value before it is
	// resolved, or drops it by returning false: use it to pull URLs out of
	// javascript: links, for example. It must be safe for concurrent use.
	ProcessValue func(value string) (string, bool)
}

// DefaultTags and DefaultAttrs are what an extractor reads unless told
// otherwise: the href of <a> and <area>.
var (
	DefaultTags  = []string{"a", "area"}
	DefaultAttrs = []string{"href"}
)

// DefaultDenyExtensions are the extensions of files that are not web pages,
// which links are dropped for by default: Scrapy's list
// (scrapy.linkextractors.IGNORED_EXTENSIONS) of archives, images, audio,
// video, office documents and other binaries.
var DefaultDenyExtensions = []string{
	// archives
	"7z", "7zip", "bz2", "rar", "tar", "tar.gz", "xz", "zip",
	// images
	"mng", "pct", "bmp", "gif", "jpg", "jpeg", "png", "pst", "psp", "tif", "tiff",
	"ai", "drw", "dxf", "eps", "ps", "svg", "cdr", "ico", "webp",
	// audio
	"mp3", "wma", "ogg", "wav", "ra", "aac", "mid", "au", "aiff",
	// video
	"3gp", "asf", "asx", "avi", "mov", "mp4", "mpg", "qt", "rm", "swf", "wmv",
	"m4a", "m4v", "flv", "webm",
	// office suites
	"xls", "xlsx", "ppt", "pptx", "pps", "doc", "docx", "odt", "ods", "odg", "odp",
	// other
	"css", "pdf", "exe", "bin", "rss", "dmg", "iso", "apk",
}

// ErrInvalidOptions is the kind of error New returns; the message names
// each bad option and value.
var ErrInvalidOptions = errors.New("invalid link extractor options")

// Extractor finds links in documents. It is immutable and safe for
// concurrent use; build it once (New) and use it for every page.
type Extractor struct {
	allow, deny, restrictText []*regexp.Regexp
	allowDomains, denyDomains domainset.Set
	sameSite                  bool
	restrict                  cascadia.Matcher
	anyTag                    bool
	tagAtoms                  []atom.Atom
	tagNames                  []string
	attrs                     []string
	denyExt                   map[string]struct{}
	canonicalize, dups        bool
	skipNoFollow              bool
	process                   func(string) (string, bool)
}

// New checks opts and compiles them. Every problem is reported at once,
// each naming the option and the value (wrapping ErrInvalidOptions).
func New(opts Options) (*Extractor, error) {
	ex := &Extractor{
		sameSite:     opts.SameRegistrableDomain,
		canonicalize: opts.Canonicalize,
		dups:         opts.AllowDuplicates,
		skipNoFollow: opts.SkipNoFollow,
		process:      opts.ProcessValue,
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	compile := func(name string, exprs []string) []*regexp.Regexp {
		var out []*regexp.Regexp
		for i, e := range exprs {
			re, err := regexp.Compile(e)
			if err != nil {
				bad("%s[%d] %q: %v", name, i, e, err)
				continue
			}
			out = append(out, re)
		}
		return out
	}
	ex.allow = compile("Allow", opts.Allow)
	ex.deny = compile("Deny", opts.Deny)
	ex.restrictText = compile("RestrictText", opts.RestrictText)
	domains := func(name string, in []string, rejectSuffix bool) []string {
		var out []string
		for i, d := range in {
			n, err := normalizeDomain(d, rejectSuffix)
			if err != nil {
				bad("%s[%d] %q: %v", name, i, d, err)
				continue
			}
			out = append(out, n)
		}
		return out
	}
	ex.allowDomains = domainset.New(domains("AllowDomains", opts.AllowDomains, true))
	ex.denyDomains = domainset.New(domains("DenyDomains", opts.DenyDomains, false))
	if len(opts.RestrictCSS) > 0 {
		var group cascadia.SelectorGroup
		for i, sel := range opts.RestrictCSS {
			g, err := cascadia.ParseGroup(sel)
			if err != nil {
				bad("RestrictCSS[%d] %q is not a valid CSS selector: %v", i, sel, err)
				continue
			}
			group = append(group, g...)
		}
		ex.restrict = group
	}
	tags := opts.Tags
	if tags == nil {
		tags = DefaultTags
	}
	if len(tags) == 0 {
		bad("Tags is empty: no element would be read (nil means %v)", DefaultTags)
	}
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		switch {
		case t == "*":
			ex.anyTag = true
		case t == "":
			bad("Tags: empty tag name")
		case atom.Lookup([]byte(t)) != 0:
			ex.tagAtoms = append(ex.tagAtoms, atom.Lookup([]byte(t)))
		default:
			ex.tagNames = append(ex.tagNames, t)
		}
	}
	attrs := opts.Attrs
	if attrs == nil {
		attrs = DefaultAttrs
	}
	if len(attrs) == 0 {
		bad("Attrs is empty: no attribute would be read (nil means %v)", DefaultAttrs)
	}
	for _, a := range attrs {
		a = strings.ToLower(strings.TrimSpace(a))
		if a == "" {
			bad("Attrs: empty attribute name")
			continue
		}
		ex.attrs = append(ex.attrs, a)
	}
	exts := opts.DenyExtensions
	if exts == nil {
		exts = DefaultDenyExtensions
	}
	ex.denyExt = make(map[string]struct{}, len(exts))
	for _, e := range exts {
		e = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(e), "."))
		if e == "" || strings.ContainsAny(e, "/?#") {
			bad("DenyExtensions: %q is not an extension (write \"pdf\" or \"tar.gz\")", e)
			continue
		}
		ex.denyExt[e] = struct{}{}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ex, nil
}

// MustNew is New for options written in code: it panics on invalid
// options, like regexp.MustCompile. Use New for options from users.
func MustNew(opts Options) *Extractor {
	ex, err := New(opts)
	if err != nil {
		panic(err)
	}
	return ex
}

// normalizeDomain checks a domain of AllowDomains or DenyDomains and
// returns it lower-cased, in IDNA ASCII form, without a leading or
// trailing dot.
func normalizeDomain(d string, rejectSuffix bool) (string, error) {
	d = strings.Trim(strings.ToLower(strings.TrimSpace(d)), ".")
	switch {
	case d == "":
		return "", errors.New("empty domain")
	case strings.Contains(d, "://") || strings.ContainsAny(d, "/?#@ "):
		return "", errors.New("want a domain such as example.com, not a URL")
	}
	if _, _, err := net.SplitHostPort(d); err == nil {
		return "", errors.New("ports are not part of a domain; list the domain only")
	}
	if ip := strings.Trim(d, "[]"); net.ParseIP(ip) != nil {
		return ip, nil
	}
	a, err := idna.Lookup.ToASCII(d)
	if err != nil {
		return "", err
	}
	if rejectSuffix {
		if ps, icann := publicsuffix.PublicSuffix(a); ps == a && icann {
			return "", errors.New("a public suffix: it would allow every site under it")
		}
	}
	return a, nil
}
