package linkextract

import (
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

func TestHostileValues(t *testing.T) {
	tests := []struct {
		href string
		want string // "" = dropped
	}{
		{"javascript:alert(1)", ""},
		{"  JavaScript:alert(1)", ""},
		{"java\tscript:alert(1)", ""},
		{"java\nscript:alert(1)", ""},
		{"jav&#x09;ascript:alert(1)", ""}, // the parser decodes the entity to a tab
		{"vbscript:msgbox", ""},
		{"mailto:someone@example.com", ""},
		{"MAILTO:someone@example.com", ""},
		{"tel:+15551234", ""},
		{"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", ""},
		{"data:,hello", ""},
		{"ftp://example.com/file", ""},
		{"file:///etc/passwd", ""},
		{"about:blank", ""},
		{"#top", ""},
		{"", ""},
		{"   ", ""},
		{"http://", ""},
		{"http:///no-host", ""},
		{"https://[::1", ""},
		{"http://exa mple.com/", ""},
		{"http://example.com/%zz", ""},
		{"//cdn.example.net/x", "https://cdn.example.net/x"},
		{" /spaced \n", "https://example.com/spaced"},
		{"/a\nb", "https://example.com/ab"},
		{"HTTPS://Example.com/Up", "https://Example.com/Up"},
		{"http:relative", ""}, // an opaque URL without a host
		{"?q=1", "https://example.com/dir/page?q=1"},
		{"../../../../up", "https://example.com/up"},
		{`\\evil.example\x`, `https://example.com/dir/%5C%5Cevil.example%5Cx`},
	}
	for _, tt := range tests {
		doc := mustDoc(t, "https://example.com/dir/page", `<a href="`+html.EscapeString(tt.href)+`">x</a>`)
		if strings.Contains(tt.href, "&#x09;") {
			doc = mustDoc(t, "https://example.com/dir/page", `<a href="`+tt.href+`">x</a>`)
		}
		got := urls(MustNew(Options{}).Links(doc))
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%q: kept %q, want dropped", tt.href, got)
		case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
			t.Errorf("%q: got %q, want %q", tt.href, got, tt.want)
		}
	}
}

// A data: URL of several megabytes is dropped by its scheme without being
// parsed or copied.
func TestHugeDataURL(t *testing.T) {
	huge := "data:image/png;base64," + strings.Repeat("A", 8<<20)
	root := &html.Node{Type: html.DocumentNode}
	a := &html.Node{Type: html.ElementNode, Data: "a", Attr: []html.Attribute{{Key: "href", Val: huge}}}
	root.AppendChild(a)
	u, _ := url.Parse("https://example.com/")
	doc := NewDocument(root, u)
	allocs := testing.AllocsPerRun(5, func() {
		doc.refs[0] = nil
		if l := MustNew(Options{}).Links(doc); len(l) != 0 {
			t.Fatal("data: URL kept")
		}
	})
	if allocs > 40 {
		t.Errorf("%v allocations to drop a data: URL", allocs)
	}
}

// The HTML parser refuses more than 512 open elements, but a Document can
// be built from any tree (an XML parse, a hand-built one): its walk and
// Link.Text use no recursion.
func TestDeepNesting(t *testing.T) {
	const depth = 200000
	root := &html.Node{Type: html.DocumentNode}
	n := root
	for range depth {
		c := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
		n.AppendChild(c)
		n = c
	}
	a := &html.Node{Type: html.ElementNode, Data: "a", DataAtom: atom.A, Attr: []html.Attribute{{Key: "href", Val: "/deep"}}}
	n.AppendChild(a)
	a.AppendChild(&html.Node{Type: html.TextNode, Data: " deep "})
	after := &html.Node{Type: html.ElementNode, Data: "a", DataAtom: atom.A, Attr: []html.Attribute{{Key: "href", Val: "/after"}}}
	root.AppendChild(after)
	u, _ := url.Parse("https://example.com/")
	doc := NewDocument(root, u)
	if got := urls(MustNew(Options{RestrictCSS: []string{"div"}}).Links(doc)); !slices.Equal(got, []string{"https://example.com/deep"}) {
		t.Errorf("inside div: %q", got)
	}
	all := MustNew(Options{}).Links(doc)
	if got := urls(all); !slices.Equal(got, []string{"https://example.com/deep", "https://example.com/after"}) {
		t.Errorf("all: %q", got)
	}
	if txt := all[0].Text(); txt != "deep" {
		t.Errorf("text %q", txt)
	}
	if txt := (Link{Node: root}).Text(); txt != "deep" {
		t.Errorf("text of the root %q", txt)
	}
}

func TestManyLinks(t *testing.T) {
	const n = 50000
	var b strings.Builder
	for i := range n {
		b.WriteString(`<a href="/p/`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(itoa(i))
		b.WriteString(`">x</a>`)
	}
	doc := mustDoc(t, "https://example.com/", b.String())
	ex := MustNew(Options{Allow: []string{`/p/x*\d+$`}})
	if got := len(ex.Links(doc)); got != n {
		t.Errorf("got %d links, want %d", got, n)
	}
	var seen Seen
	if got := len(ex.AppendLinks(nil, doc, &seen)); got != n || seen.Len() != n {
		t.Errorf("with a shared Seen: %d links, %d seen", got, seen.Len())
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

func TestInvalidUTF8AndControlBytes(t *testing.T) {
	body := "<a href=\"/\xff\xfe\">bad utf-8</a><a href=\"/nul\x00x\">nul</a><a href=\"/ok\">ok</a>"
	doc := mustDoc(t, "https://example.com/", body)
	for _, l := range MustNew(Options{}).Links(doc) {
		if !utf8.ValidString(l.URL) {
			t.Errorf("link %q is not valid UTF-8", l.URL)
		}
		if strings.ContainsRune(l.URL, 0) {
			t.Errorf("link %q holds a NUL", l.URL)
		}
	}
}

func FuzzLinks(f *testing.F) {
	f.Add(page, "https://example.com/a/")
	f.Add(`<base href="//x"><a href="javascript:x">`, "http://h/")
	f.Add(`<a href="%">`, "https://h/?q")
	f.Add("<a href=\"java\tscript:1\" rel=nofollow><area href=../..>", "http://[::1]:80/")
	exs := []*Extractor{
		MustNew(Options{}),
		MustNew(Options{Canonicalize: true, SameRegistrableDomain: true, RestrictCSS: []string{"div, p a"}, Tags: []string{"*"}, Attrs: []string{"href", "src"}}),
		MustNew(Options{AllowDomains: []string{"example.com"}, RestrictText: []string{"."}, SkipNoFollow: true}),
	}
	f.Fuzz(func(t *testing.T, body, pageURL string) {
		u, err := url.Parse(pageURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return
		}
		root, err := html.Parse(strings.NewReader(body))
		if err != nil {
			return
		}
		doc := NewDocument(root, u)
		var seen Seen
		for _, ex := range exs {
			for _, l := range ex.AppendLinks(nil, doc, &seen) {
				p, err := url.Parse(l.URL)
				if err != nil {
					t.Fatalf("link %q does not parse: %v", l.URL, err)
				}
				if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.Fragment != "" {
					t.Fatalf("link %q is not an absolute http(s) URL without fragment", l.URL)
				}
				if pu := l.ParsedURL(); pu.String() != l.URL {
					t.Fatalf("ParsedURL %q != URL %q", pu, l.URL)
				}
				_ = l.Text()
			}
		}
	})
}

// hostilePage returns a page of n pieces of pathological markup:
// unterminated comments and quotes, tags that never close, thousands of
// "<a", scripts hiding "<!--<script>", entities in values.
func hostilePage(n int) string {
	pieces := []string{
		`<a href="/p/1">one</a>`,
		`<a <a <a href=/x `,
		`<a title="unterminated `,
		`"><!-- unterminated <a href=/c> `,
		`--><script><!--<script>x</script><a href=/s></script>--></script>`,
		`<a href='&amp;&lt;&#x41;&notit;&zz;'>e</a>`,
		`<!DOCTYPE <!-- <? </ <a href=/d>`,
		`<title>t &amp; <a href=/t></title><textarea>&amp;</textarea>`,
		`<` + "\x00" + `a b=c d e="f` + "\r\n" + `">`,
	}
	var b strings.Builder
	for i := range n {
		b.WriteString(pieces[i%len(pieces)])
	}
	return b.String()
}

// hostileLarge is a page of about 23*n bytes of pathological markup: the
// pieces of hostilePage, one tag with n/4 distinct attribute names and
// one with n/4 repeated ones, n "<a" in a row, scripts hiding
// "<!--<script>", and an unterminated quote and comment at the end.
func hostileLarge(n int) []byte {
	var b strings.Builder
	b.WriteString(hostilePage(n / 2))
	b.WriteString("<a ")
	for i := range n / 4 {
		b.WriteString("d")
		b.WriteString(itoa(i))
		b.WriteString("=x ")
	}
	b.WriteString(">")
	b.WriteString("<a " + strings.Repeat("<a ", n/4) + ">")
	b.WriteString(strings.Repeat("<a", n))
	b.WriteString(strings.Repeat("<script><!--<script>", n/20))
	b.WriteString(`</script>--></script><a href="unterminated <!-- unterminated `)
	return []byte(b.String())
}

// scanWork is the work count of the scanner over body.
func scanWork(body []byte) int {
	z := scanner{b: body}
	for z.next() != tokError {
	}
	return z.work
}

// A page of megabytes of pathological markup is scanned in time linear in
// its size: the allocations, the bytes allocated and the scanner's work
// count (tokens, names compared) grow as the page does.
func TestScanHostileLinear(t *testing.T) {
	u, _ := url.Parse("https://example.com/")
	type cost struct{ size, work, allocs, bytes float64 }
	measure := func(body []byte) cost {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		allocs := testing.AllocsPerRun(1, func() { ScanDocument(body, u) })
		runtime.ReadMemStats(&after)
		return cost{float64(len(body)), float64(scanWork(body)), allocs, float64(after.TotalAlloc-before.TotalAlloc) / 2}
	}
	small, big := measure(hostileLarge(50000)), measure(hostileLarge(200000))
	if big.size < 4<<20 {
		t.Fatalf("the large page is %.0f bytes, want several MB", big.size)
	}
	t.Logf("small %+v\nbig   %+v", small, big)
	grow := big.size / small.size
	for _, c := range []struct {
		what       string
		small, big float64
	}{{"work", small.work, big.work}, {"allocations", small.allocs, big.allocs}, {"bytes allocated", small.bytes, big.bytes}} {
		if c.big > 1.25*grow*c.small {
			t.Errorf("%s grow %.1fx for a page %.1fx as large", c.what, c.big/c.small, grow)
		}
	}
	if big.work > big.size {
		t.Errorf("work %.0f for a page of %.0f bytes", big.work, big.size)
	}
	// The scan reads the hostile page as the tokenizer does.
	body := hostileLarge(2000)
	if diff := docDiff(ScanDocument(body, u), scanDocumentTokenizer(body, u)); diff != "" {
		t.Errorf("hostile page: %s", diff[:min(len(diff), 2000)])
	}
}
