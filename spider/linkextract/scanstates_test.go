package linkextract

import (
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// scannerStates are pages for each state of the HTML5 tokenizer that the
// scanner follows; want is what a scan must read (summary): the elements
// with attributes, the text of each <a>, the title. The tokenizer reads
// them so, and so must the scanner.
var scannerStates = []struct {
	name, body, want string
}{
	// Comments.
	{"comment", `<!-- <a href="/no"> --><a href="/yes">y</a>`, "a(href=/yes)[y]"},
	{"comment empty <!-->", `<!--><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"comment <!--->", `<!---><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"comment --!>", `<!-- x --!><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"comment --!-", `<!-- --!-- <a href=/no> --><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"comment --!x", `<!-- --!x <a href=/no> --><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"comment dashes", `<!-- a- -> b --- ><a href=/no> ----><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"comment at eof", `<a href=/yes>t<!-- <a href=/no>`, "a(href=/yes)[t]"},
	{"comment <!- at eof", `<a href=/yes>t<!-`, "a(href=/yes)[t]"},
	{"bogus comment <?", `<?php echo "<a href='/x'>" ?><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"bogus comment </ >", `<a href=/a>x</ y>z</a>`, "a(href=/a)[xz]"},
	{"bogus comment </>", `<a href=/a>x</>y</a>`, "a(href=/a)[xy]"},
	{"bogus comment <!x", `<!foo <a href=/no>><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"cdata is a bogus comment", `<![CDATA[<a href=/no>]]><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	// Doctype.
	{"doctype", `<!DOCTYPE html><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"doctype lower case", `<!doctype <a href=/no>><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"doctype at eof", `<a href=/a>t<!DOCTY`, "a(href=/a)[t]"},
	{"doctype then eof", `<a href=/a>t<!DOCTYPE  `, "a(href=/a)[t]"},
	// Text and tags that are not tags.
	{"tag name starts with a digit", `<a href=/a>x<3y <1a href=/no></a>`, "a(href=/a)[x<3y <1a href=/no>]"},
	{"space after <", `< a href=/no><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"</ at eof", `<a href=/a>x</`, "a(href=/a)[x</]"},
	{"< at eof", `<a href=/a>x<`, "a(href=/a)[x<]"},
	{"start tag at eof", `<a href=/a>x<b`, "a(href=/a)[x]"},
	{"end tag at eof", `<a href=/a>x</b`, "a(href=/a)[x]"},
	{"text entities", `<a href=/a>A &amp; B &lt;&gt; &notit; &amp</a>`, "a(href=/a)[A & B <> ¬it; &]"},
	{"text entity split by a comment", `<a href=/a>&am<!---->p;</a>`, "a(href=/a)[&amp;]"},
	{"text newlines", "<a href=/a>a\r\nb\rc\r</a>", "a(href=/a)[a\nb\nc\n]"},
	{"text nul kept", "<a href=/a>a\x00b</a>", "a(href=/a)[a\x00b]"},
	{"<a> closes the open <a>", `<a href=/a>t<a>u</a>`, "a(href=/a)[t]"},
	{"self-closing <a/> closes the open <a>", `<a href=/a>t<a href=/b/>u</a>`, "a(href=/a)[t] a(href=/b/)[u]"},
	// Attributes.
	{"quotes", `<a href='/s' title="d" rel=nofollow>q</a>`, "a(href=/s title=d rel=nofollow)[q]"},
	{"> inside quotes", `<a title="a>b" href=/q>q</a>`, "a(title=a>b href=/q)[q]"},
	{"/ between attributes", `<a/href=/slash/title=x>q</a>`, "a(href=/slash/title=x)[q]"},
	{"unquoted value ending in /", `<a href=/v/>q</a>`, "a(href=/v/)[q]"},
	{"self-closing after a quoted value", `<a href="/v"/>q</a>`, "a(href=/v)"},
	{"duplicate attributes", `<a href=/first HREF=/second title=t hReF=/third>q</a>`, "a(href=/first title=t)[q]"},
	{"empty values", `<a href= > <img src=""  alt>`, "a(href=)[ ] img(src= alt=)"},
	{"= first in a name", `<a =x href=/e ==y>q</a>`, "a(=x= href=/e ==y)[q]"},
	{"= then >", `<a href=>q</a>`, "a(href=)[q]"},
	{"upper-case names", `<A HREF=/U CLASS=C DATA-X=1>q</A>`, "a(href=/U class=C data-x=1)[q]"},
	{"attribute entities", `<a href="/?a=1&amp;b=2&ampc=3&amp=4&b=5&#x41;&#65&#128;&#0;&notit;&nbsp;&x">q</a>`, "a(href=/?a=1&b=2&ampc=3&amp=4&b=5AA€�&notit;\u00a0&x)[q]"},
	{"attribute entities without ;", `<a href="&copy &copy= &lt &quot; &apos &hellip;&Aacute;&AElig&nLt;&NotEqualTilde;&nLt&amp;x">q</a>`, "a(href=© &copy= < \" &apos …ÁÆ≪⃒≂̸&nLt&x)[q]"},
	{"attribute nul and newlines", "<a hr\x00ef=\"/a\x00b\" href=\"/c\r\nd\re\">q</a>", "a(hr�ef=/a�b href=/c\nd\ne)[q]"},
	{"tag name nul", "<a\x00b href=/n>q</a\x00b><a href=/m>m</a>", "a�b(href=/n) a(href=/m)[m]"},
	{"many attributes", `<a ` + manyAttrsTag(40) + `>q</a>`, "a(d0=0 d1=1 d2=2 d3=3 d4=4 d5=5 d6=6 d7=7 d8=8 d9=9 d10=10 d11=11 d12=12 d13=13 d14=14 d15=15 d16=16 d17=17 d18=18 d19=19 d20=20 d21=21 d22=22 d23=23 d24=24 d25=25 d26=26 d27=27 d28=28 d29=29 href=/many)[q]"},
	{"attribute at eof", `<a href=/a>t</a><a href="/eof`, "a(href=/a)[t]"},
	{"unquoted value at eof", `<a href=/a>t</a><a href=/eof`, "a(href=/a)[t]"},
	{"name at eof", `<a href=/a>t</a><a href`, "a(href=/a)[t]"},
	// Raw text and RCDATA.
	{"script", `<script><a href=/no></script><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"script end tag case and space", `<script>x</SCRIPT ><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"script escaped", `<script><!--<a href=/no></script><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"script double escaped", `<script><!--<script></script><a href=/no></script>--></script><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"script escaped dashes", `<script><!-- -- - --></script><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"script double escaped end", `<script><!--<script>x</script >--><a href=/no></script><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"script at eof", `<a href=/a>t<script>abc<!--<script>`, "a(href=/a)[tabc<!--<script>]"},
	{"script in <a>", "<a href=/a><script>&amp;\x00</script></a>", "a(href=/a)[&amp;�]"},
	{"style", `<style><a href=/no></style><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"xmp", `<xmp><a href=/no></xmp><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"iframe", `<iframe src=/f><a href=/no></iframe><a href=/yes>y</a>`, "iframe(src=/f) a(href=/yes)[y]"},
	{"noembed", `<noembed><a href=/no></noembed><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"noframes", `<noframes><a href=/no></noframes><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"noscript", `<noscript><a href=/no></noscript><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"plaintext", `<a href=/a>t<plaintext></a><a href=/no>`, "a(href=/a)[t</a><a href=/no>]"},
	{"raw text not closed by a longer name", `<style></styles><a href=/no></style><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"raw text in <a> keeps entities", `<a href=/a><style>&amp;</style></a>`, "a(href=/a)[&amp;]"},
	{"textarea decodes entities", "<a href=/a><textarea>&amp;<b>\x00</textarea></a>", "a(href=/a)[&<b>�]"},
	{"title", `<title> A &amp; B <b> </title><a href=/yes>y</a>`, "a(href=/yes)[y] title=A & B <b>"},
	{"second title", `<title>one</title><a href=/a><title>two</title></a>`, "a(href=/a)[two] title=one"},
	{"title at eof", `<title>abc</title`, "title=abc</title"},
	{"self-closing script", `<script/><a href=/no></script><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	{"self-closing title", `<title/>x</title><title>y</title>`, "title="},
	{"empty raw text", `<script></script><a href=/yes>y</a>`, "a(href=/yes)[y]"},
	// End tags.
	{"end tag with attributes", `<a href=/a>x</a title=">"><a href=/b>b</a>`, "a(href=/a)[x] a(href=/b)[b]"},
	{"title end tag with a quoted </title>", `<title>t</title foo="</title>">x<a href=/a>a</a>`, "a(href=/a)[a] title=t"},
	{"end tag with / and spaces", `<a href=/a>x</a / ><a href=/b>b</a>`, "a(href=/a)[x] a(href=/b)[b]"},
	// Head.
	{"base and meta robots", `<base href="/sub/"><meta NAME=robots content="NOFOLLOW"><a href=x>x</a>`, "base(href=/sub/) meta(name=robots content=NOFOLLOW) a(href=x)[x]"},
}

func manyAttrsTag(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "d%d=%d D%d=x ", i%30, i, i%7)
	}
	b.WriteString("href=/many")
	return b.String()
}

// summary is what a scan read, short: each element with its attributes
// and text, the title.
func summary(d *Document) string {
	var parts []string
	for _, e := range d.elems {
		s := e.n.Data + "("
		for i, a := range e.n.Attr {
			if i > 0 {
				s += " "
			}
			s += a.Key + "=" + a.Val
		}
		s += ")"
		var text strings.Builder
		for c := e.n.FirstChild; c != nil; c = c.NextSibling {
			text.WriteString(c.Data)
		}
		if e.n.FirstChild != nil {
			s += "[" + text.String() + "]"
		}
		parts = append(parts, s)
	}
	if d.titleSeen {
		parts = append(parts, "title="+d.title)
	}
	return strings.Join(parts, " ")
}

func TestScannerStates(t *testing.T) {
	for _, tc := range scannerStates {
		t.Run(tc.name, func(t *testing.T) {
			want := scanDocumentTokenizer([]byte(tc.body), diffURL)
			if s := summary(want); s != tc.want {
				t.Errorf("the tokenizer reads %q, the table says %q", s, tc.want)
			}
			checkScan(t, tc.body)
		})
	}
}

// tokenizerAttr returns the value the tokenizer reads from the raw
// attribute value v (double-quoted).
func tokenizerAttr(t *testing.T, v string) string {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(`<a x="` + v + `">`))
	if z.Next() != html.StartTagToken {
		t.Fatalf("no tag for %q", v)
	}
	_, val, _ := z.TagAttr()
	return string(val)
}

// The entities decoded without asking x/net/html's table, and the way
// attrEntity tells an entity from a shorter one followed by letters, agree
// with the tokenizer.
func TestCommonEntities(t *testing.T) {
	names := []string{"notit;", "notin;", "not", "noti", "ampx", "amp;x", "lt;", "LT", "nLt;", "nLt", "NotEqualTilde;",
		"semi;", "num;", "Aacute", "AElig;", "copysr;", "frac12", "frac12;", "frac123", "zz;", "x", "b", "a0;", "CounterClockwiseContourIntegral;",
		"#65;", "#x41", "#X41;z", "#x80;", "#x9F", "#0;", "#xD800;", "#1114111;", "#1114112;", "#99999999999999;", "#x", "#;", "#"}
	for k := range commonEntities {
		names = append(names, k)
	}
	for _, name := range names {
		want := tokenizerAttr(t, "&"+name)
		got := string(appendAttrValueString("&" + name))
		if got != want {
			t.Errorf("&%s: %q, the tokenizer reads %q", name, got, want)
		}
	}
}

func appendAttrValueString(s string) []byte {
	out, _ := appendAttrValue(nil, []byte(s), nil)
	return out
}

// Every name of x/net/html's entity table, in the shapes an attribute
// value may hold it (alone, before '=', before letters, before a shorter
// name's rest, twice), decodes as the tokenizer decodes it. A hand-picked
// list missed "&fjlig;", the one two-rune entity whose second rune is
// ASCII ("fj").
func TestAllEntitiesInAttributes(t *testing.T) {
	data, err := os.ReadFile("testdata/entity-names.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range strings.Split(string(data), "\n") {
		if name == "" || strings.HasPrefix(name, "#") {
			continue
		}
		n++
		for _, v := range []string{"&" + name, "&" + name + "=", "&" + name + "ab", "&" + name + "x;", "&" + name + "1;", "a&" + name + "&" + name} {
			if got, want := string(appendAttrValueString(v)), tokenizerAttr(t, v); got != want {
				t.Errorf("%q: %q, the tokenizer reads %q", v, got, want)
			}
		}
	}
	if n < 2000 {
		t.Fatalf("read %d entity names, want the whole table", n)
	}
	checkScan(t, `<a href="/x&fjlig;y">t</a>`)
}

// A page of inline script holds many '=' and few elements: the scan's
// slabs are sized by what it finds, not by the '=' (a guess of one slot
// per '=' allocated hundreds of KB for such a page).
func TestScanScriptHeavyPageAllocatesLittle(t *testing.T) {
	var b strings.Builder
	b.WriteString("<html><head><script>")
	for i := range 3000 {
		fmt.Fprintf(&b, "var v%d = x%d == y ? a = 1 : b = 2;\n", i, i)
	}
	b.WriteString("</script></head><body>")
	for i := range 20 {
		fmt.Fprintf(&b, `<a href="/p/%d">page %d</a>`, i, i)
	}
	b.WriteString("</body></html>")
	body := []byte(b.String())
	u, _ := url.Parse("http://example.com/")
	ScanDocument(body, u) // warm the scratch pool
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const runs = 20
	for range runs {
		if d := ScanDocument(body, u); len(d.elems) != 20 {
			t.Fatalf("%d elements, want 20", len(d.elems))
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 48<<10 {
		t.Errorf("a script-heavy page of %d KB with 20 links allocated %d bytes per scan, want under 48 KB", len(body)>>10, per)
	}
}
