package linkextract

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func mustDoc(t testing.TB, pageURL, body string) *Document {
	t.Helper()
	root, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	return NewDocument(root, u)
}

func urls(links []Link) []string {
	out := make([]string, 0, len(links))
	for _, l := range links {
		out = append(out, l.URL)
	}
	return out
}

const page = `<!DOCTYPE html><html><head><title>t</title>
<link rel="next" href="/list?page=2">
<link rel="stylesheet" href="/style.css">
</head><body>
<nav><a href="/">Home</a> <a href="/about">About us</a></nav>
<main>
  <a href="/product/1">Product <b>one</b></a>
  <a href="product/2#reviews">Product two</a>
  <a href="https://shop.example.com/product/3">Three</a>
  <a href="https://other.org/x">Other</a>
  <a href="/files/manual.PDF">Manual</a>
  <a href="/files/src.tar.gz">Sources</a>
  <a href="/ads" rel="sponsored nofollow">Ad</a>
  <img src="/img/p1.png"> <img src="/img/p1">
  <map><area href="/area-link"></map>
  <a href="/product/1">Product one again</a>
</main>
<footer><a href="/legal">Legal</a></footer>
</body></html>`

func TestOptions(t *testing.T) {
	const pageURL = "https://example.com/catalogue/"
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"defaults: a and area, binaries dropped, unique, document order", Options{}, []string{
			"https://example.com/", "https://example.com/about", "https://example.com/product/1",
			"https://example.com/catalogue/product/2", "https://shop.example.com/product/3", "https://other.org/x",
			"https://example.com/ads", "https://example.com/area-link", "https://example.com/legal"}},
		{"allow", Options{Allow: []string{`/product/\d+$`}}, []string{
			"https://example.com/product/1", "https://example.com/catalogue/product/2", "https://shop.example.com/product/3"}},
		{"allow several", Options{Allow: []string{`/about$`, `/legal$`}}, []string{
			"https://example.com/about", "https://example.com/legal"}},
		{"deny wins over allow", Options{Allow: []string{`/product/`}, Deny: []string{`shop\.`}}, []string{
			"https://example.com/product/1", "https://example.com/catalogue/product/2"}},
		{"allow domains include subdomains", Options{AllowDomains: []string{"Example.COM."}}, []string{
			"https://example.com/", "https://example.com/about", "https://example.com/product/1",
			"https://example.com/catalogue/product/2", "https://shop.example.com/product/3",
			"https://example.com/ads", "https://example.com/area-link", "https://example.com/legal"}},
		{"deny domains", Options{DenyDomains: []string{"shop.example.com", "other.org"}, Allow: []string{"product|/x"}}, []string{
			"https://example.com/product/1", "https://example.com/catalogue/product/2"}},
		{"same registrable domain", Options{SameRegistrableDomain: true, Allow: []string{"product|/x"}}, []string{
			"https://example.com/product/1", "https://example.com/catalogue/product/2", "https://shop.example.com/product/3"}},
		{"restrict css", Options{RestrictCSS: []string{"nav", "footer"}}, []string{
			"https://example.com/", "https://example.com/about", "https://example.com/legal"}},
		{"restrict css selecting the links themselves", Options{RestrictCSS: []string{"a[rel~=nofollow], nav a:first-child"}}, []string{
			"https://example.com/", "https://example.com/ads"}},
		{"restrict text", Options{RestrictText: []string{`(?i)^product one$`, `^About`}}, []string{
			"https://example.com/about", "https://example.com/product/1"}},
		{"tags and attrs: images", Options{Tags: []string{"img"}, Attrs: []string{"src"}}, []string{
			"https://example.com/img/p1"}},
		{"images with every extension", Options{Tags: []string{"img"}, Attrs: []string{"src"}, DenyExtensions: []string{}}, []string{
			"https://example.com/img/p1.png", "https://example.com/img/p1"}},
		{"link href", Options{Tags: []string{"link"}}, []string{"https://example.com/list?page=2"}},
		{"any tag", Options{Tags: []string{"*"}, Attrs: []string{"href", "src"}, Allow: []string{"list|img"}}, []string{
			"https://example.com/list?page=2", "https://example.com/img/p1"}},
		{"deny extensions: custom list, two-part extension", Options{DenyExtensions: []string{".tar.gz"}, Allow: []string{"files"}}, []string{
			"https://example.com/files/manual.PDF"}},
		{"deny extensions: none", Options{DenyExtensions: []string{}, Allow: []string{"files"}}, []string{
			"https://example.com/files/manual.PDF", "https://example.com/files/src.tar.gz"}},
		{"duplicates kept", Options{AllowDuplicates: true, Allow: []string{"product/1"}}, []string{
			"https://example.com/product/1", "https://example.com/product/1"}},
		{"skip nofollow", Options{SkipNoFollow: true, RestrictCSS: []string{"main"}, Allow: []string{"ads|area"}}, []string{
			"https://example.com/area-link"}},
		{"process value", Options{ProcessValue: func(v string) (string, bool) {
			if strings.HasPrefix(v, "/product/") {
				return strings.Replace(v, "/product/", "/p/", 1), true
			}
			return "", false
		}}, []string{"https://example.com/p/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := urls(ex.Links(mustDoc(t, pageURL, page)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("links:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestLinkFields(t *testing.T) {
	doc := mustDoc(t, "https://example.com/catalogue/", page)
	links := MustNew(Options{RestrictCSS: []string{"main"}}).Links(doc)
	byURL := map[string]Link{}
	for _, l := range links {
		byURL[l.URL] = l
	}
	one := byURL["https://example.com/product/1"]
	if one.Text() != "Product one" || one.Tag != "a" || one.Attr != "href" || one.NoFollow || one.Fragment != "" {
		t.Errorf("product 1: text %q tag %q attr %q nofollow %v fragment %q", one.Text(), one.Tag, one.Attr, one.NoFollow, one.Fragment)
	}
	two := byURL["https://example.com/catalogue/product/2"]
	if two.Fragment != "reviews" {
		t.Errorf("fragment %q", two.Fragment)
	}
	if ad := byURL["https://example.com/ads"]; !ad.NoFollow {
		t.Error("rel=\"sponsored nofollow\" not marked NoFollow")
	}
	if area := byURL["https://example.com/area-link"]; area.Tag != "area" || area.Text() != "" {
		t.Errorf("area: %+v", area)
	}
	u := one.ParsedURL()
	u.Path = "/changed"
	if one.ParsedURL().Path != "/product/1" || doc.refs == nil {
		t.Error("ParsedURL returned a shared value")
	}
}

func TestBaseHref(t *testing.T) {
	tests := []struct {
		name, head string
		want       string
	}{
		{"relative base", `<base href="/sub/dir/">`, "https://example.com/sub/dir/x"},
		{"absolute base", `<base href="https://cdn.example.net/b/">`, "https://cdn.example.net/b/x"},
		{"first base wins", `<base href="/one/"><base href="/two/">`, "https://example.com/one/x"},
		{"base without href is skipped", `<base target="_blank"><base href="/two/">`, "https://example.com/two/x"},
		{"javascript base ignored", `<base href="javascript:alert(1)">`, "https://example.com/page/x"},
		{"data base ignored", `<base href="data:text/html,hi">`, "https://example.com/page/x"},
		{"unparsable base ignored", `<base href="http://[::1">`, "https://example.com/page/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := mustDoc(t, "https://example.com/page/", `<html><head>`+tt.head+`</head><body><a href="x">x</a></body></html>`)
			got := urls(MustNew(Options{}).Links(doc))
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMetaRobotsNoFollow(t *testing.T) {
	for _, content := range []string{"noindex, nofollow", "NONE", " NoFollow "} {
		doc := mustDoc(t, "https://example.com/", `<html><head><meta name="Robots" content="`+content+`"></head><body><a href="/a">a</a></body></html>`)
		if !doc.NoFollow() {
			t.Errorf("%q: document not nofollow", content)
		}
		if l := MustNew(Options{}).Links(doc); len(l) != 1 || !l[0].NoFollow {
			t.Errorf("%q: links %+v", content, l)
		}
		if l := MustNew(Options{SkipNoFollow: true}).Links(doc); len(l) != 0 {
			t.Errorf("%q: SkipNoFollow kept %v", content, urls(l))
		}
	}
	doc := mustDoc(t, "https://example.com/", `<meta name="robots" content="noindex"><a href="/a">a</a>`)
	if doc.NoFollow() {
		t.Error("noindex alone made the document nofollow")
	}
}

func TestCanonicalize(t *testing.T) {
	body := `<a href="HTTP://Example.COM:80/a/%7euser/%2fx?b=2&a=1&a=&c#frag">1</a>
<a href="http://example.com/a/~user/%2Fx?a=&a=1&b=2&c">same page</a>
<a href="http://example.com">root</a>`
	doc := mustDoc(t, "http://example.com/", body)
	plain := MustNew(Options{}).Links(doc)
	if got := urls(plain); !slices.Equal(got, []string{"http://Example.COM:80/a/%7euser/%2fx?b=2&a=1&a=&c", "http://example.com"}) {
		t.Errorf("without Canonicalize: %q (duplicates are found in canonical form)", got)
	}
	canon := MustNew(Options{Canonicalize: true}).Links(doc)
	if got := urls(canon); !slices.Equal(got, []string{"http://example.com/a/~user/%2Fx?a=&a=1&b=2&c", "http://example.com/"}) {
		t.Errorf("with Canonicalize: %q", got)
	}
	if canon[0].ParsedURL().String() != canon[0].URL {
		t.Errorf("ParsedURL %s differs from URL %s", canon[0].ParsedURL(), canon[0].URL)
	}
	if plain[0].Key() != canon[0].URL {
		t.Errorf("Key %q, want %q", plain[0].Key(), canon[0].URL)
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.com", "http://example.com/"},
		{"HTTPS://EXAMPLE.com:443/A?", "https://example.com/A"},
		{"http://example.com:8080/", "http://example.com:8080/"},
		{"http://example.com/a%2fb%41%7E", "http://example.com/a%2FbA~"},
		{"http://example.com/?z=1&a=2&a=1&&m", "http://example.com/?a=1&a=2&m&z=1"},
		{"http://example.com/?q=a+b&q=%20", "http://example.com/?q=%20&q=a+b"},
		{"http://bücher.example/x", "http://xn--bcher-kva.example/x"},
		{"http://user:pw@Example.com/#x", "http://user:pw@example.com/"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Canonical(u).String(); got != tt.want {
			t.Errorf("Canonical(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if u.String() != mustParse(t, tt.in).String() {
			t.Errorf("Canonical(%s) modified its argument", tt.in)
		}
		c := Canonical(u)
		if again := Canonical(c); again != c {
			t.Errorf("Canonical(%s) is not idempotent: %s then %s", tt.in, c, again)
		}
	}
}

func TestNormalizeEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"":             "",
		"/plain":       "/plain",
		"%41%2f%7e":    "A%2F~",
		"%zz%4":        "%25zz%254",
		"100%":         "100%25",
		"%e2%82%ac":    "%E2%82%AC",
		"%2D%2E%5F%7E": "-._~",
	} {
		if got := normalizeEscapes(in); got != want {
			t.Errorf("normalizeEscapes(%q) = %q, want %q", in, got, want)
		}
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSeenAcrossExtractors(t *testing.T) {
	doc := mustDoc(t, "https://example.com/catalogue/", page)
	products := MustNew(Options{Allow: []string{"product"}})
	all := MustNew(Options{})
	var seen Seen
	first := products.AppendLinks(nil, doc, &seen)
	rest := all.AppendLinks(nil, doc, &seen)
	if len(first) != 3 || seen.Len() != len(first)+len(rest) {
		t.Fatalf("first %q rest %q seen %d", urls(first), urls(rest), seen.Len())
	}
	for _, l := range rest {
		if strings.Contains(l.URL, "product") {
			t.Errorf("second extractor got %s, already taken by the first", l.URL)
		}
	}
	if again := all.AppendLinks(nil, doc, &seen); len(again) != 0 {
		t.Errorf("everything was seen, got %q", urls(again))
	}
	// With duplicates allowed, a link taken by an earlier extractor is still skipped.
	var seen2 Seen
	products.AppendLinks(nil, doc, &seen2)
	if dups := MustNew(Options{AllowDuplicates: true}).AppendLinks(nil, doc, &seen2); slices.ContainsFunc(dups, func(l Link) bool {
		return strings.Contains(l.URL, "product")
	}) {
		t.Errorf("AllowDuplicates ignored seen: %q", urls(dups))
	}
}

func TestSeenGrowsIntoAMap(t *testing.T) {
	var s Seen
	for i := range 100 {
		if !s.Add(strings.Repeat("x", i)) {
			t.Fatalf("key %d reported as seen", i)
		}
	}
	for i := range 100 {
		if !s.Has(strings.Repeat("x", i)) || s.Add(strings.Repeat("x", i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	if s.Len() != 100 {
		t.Errorf("Len %d", s.Len())
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(Options{
		Allow:          []string{`ok`, `(`},
		Deny:           []string{`[`},
		RestrictText:   []string{`*`},
		AllowDomains:   []string{"co.uk", "https://x.com/", "a.com:80", ""},
		DenyDomains:    []string{"com"},
		RestrictCSS:    []string{"div[", "nav"},
		Tags:           []string{},
		Attrs:          []string{" "},
		DenyExtensions: []string{"a/b"},
	})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("err = %v, want ErrInvalidOptions", err)
	}
	for _, want := range []string{
		`Allow[1] "("`, `Deny[0] "["`, `RestrictText[0] "*"`,
		`AllowDomains[0] "co.uk": a public suffix`, `AllowDomains[1] "https://x.com/": want a domain`,
		`AllowDomains[2] "a.com:80": ports`, `AllowDomains[3] "": empty domain`,
		`RestrictCSS[0] "div[" is not a valid CSS selector`, "Tags is empty", "Attrs: empty attribute name",
		`DenyExtensions: "a/b"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), `DenyDomains`) {
		t.Errorf("a public suffix in DenyDomains is fine (it denies a whole TLD): %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustNew did not panic on invalid options")
			}
		}()
		MustNew(Options{Allow: []string{"("}})
	}()
}

func TestIPAndIDNDomains(t *testing.T) {
	body := `<a href="http://127.0.0.1:8080/a">ip</a><a href="http://BÜCHER.example/b">idn</a><a href="http://xn--bcher-kva.example./c">idn ascii</a>`
	doc := mustDoc(t, "http://127.0.0.1:8080/", body)
	if got := urls(MustNew(Options{AllowDomains: []string{"127.0.0.1"}}).Links(doc)); !slices.Equal(got, []string{"http://127.0.0.1:8080/a"}) {
		t.Errorf("ip domain: %q", got)
	}
	if got := MustNew(Options{AllowDomains: []string{"bücher.example"}}).Links(doc); len(got) != 2 {
		t.Errorf("idn domain: %q", urls(got))
	}
	if got := urls(MustNew(Options{SameRegistrableDomain: true}).Links(doc)); !slices.Equal(got, []string{"http://127.0.0.1:8080/a"}) {
		t.Errorf("same site of an IP page: %q", got)
	}
}

func TestNilAndEmptyDocuments(t *testing.T) {
	ex := MustNew(Options{})
	if l := ex.Links(nil); l != nil {
		t.Errorf("nil document: %v", l)
	}
	u, _ := url.Parse("https://example.com/")
	if l := ex.Links(NewDocument(nil, u)); l != nil {
		t.Errorf("empty document: %v", l)
	}
	if l := ex.Links(mustDoc(t, "https://example.com/", "")); len(l) != 0 {
		t.Errorf("empty page: %v", l)
	}
}

// An element root (a subtree) closes its own region.
func TestSubtreeRoot(t *testing.T) {
	root, _ := html.Parse(strings.NewReader(`<div id="x"><a href="/in">in</a></div><a href="/out">out</a>`))
	var div *html.Node
	for n := range root.Descendants() {
		if n.Type == html.ElementNode && n.Data == "div" {
			div = n
		}
	}
	u, _ := url.Parse("https://example.com/")
	doc := NewDocument(div, u)
	if got := urls(MustNew(Options{RestrictCSS: []string{"#x"}}).Links(doc)); !slices.Equal(got, []string{"https://example.com/in"}) {
		t.Errorf("got %q", got)
	}
}
