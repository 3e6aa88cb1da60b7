package linkextract

import (
	"fmt"
	"net/url"
	"testing"
)

// slowResolve is what resolve does without its shortcuts.
func slowResolve(base *url.URL, raw string) (string, bool) {
	ref := cleanRef(raw)
	if ref == "" || ref[0] == '#' {
		return "", false
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", false
	}
	u := base.ResolveReference(r)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}

// checkResolve compares a Document's resolution of ref (its shortcuts
// included) with net/url's, and the canonical key with Canonical's.
func checkResolve(base *url.URL, ref string) string {
	want, wantOK := slowResolve(base, ref)
	d := NewDocument(nil, base)
	r := d.newRef(ref)
	ok := r.s != ""
	got := ""
	if ok {
		got = r.s
		if s := r.url().String(); s != got {
			return fmt.Sprintf("resolve(%q, %q): URL %q but string %q", base, ref, s, got)
		}
		if r.urlPath() != r.url().Path {
			return fmt.Sprintf("resolve(%q, %q): path %q, URL path %q", base, ref, r.urlPath(), r.url().Path)
		}
		if key := Canonical(r.url()).String(); key != r.key {
			return fmt.Sprintf("resolve(%q, %q): key %q, want %q", base, ref, r.key, key)
		}
	}
	if ok != wantOK || got != want {
		return fmt.Sprintf("resolve(%q, %q) = %q, %v; net/url gives %q, %v", base, ref, got, ok, want, wantOK)
	}
	return ""
}

var resolveBases = []string{
	"https://example.com/dir/page.html?q=1#f",
	"http://user@example.com:8080/a/b/",
	"https://example.com",
	"https://example.com/a%20b/c",
	"https://example.com/x/./y/",
	"http://127.0.0.1:9/",
	"http://127.0.0.1:9/page/3",
	"HTTP://Example.COM:80/Dir/x",
}

var resolveRefs = []string{
	"/page/12", "page/12", "item/3.html", "/", "a", "../up", "./here", "/a//b", "//other.example/x",
	"/a/b?q=1", "/%41", "/café", "/a b", "?q", "https://example.com/abs", "https://example.com/a/../b",
	"https://example.com", "HTTP://X.COM/P", "/~user/.profile", "/.", "..", "a/..", "/x/.", "",
	"../page/7", "../../a/./b/../c", "http://127.0.0.1:9/page/1", "http://127.0.0.1:90/page/1", "http://127.0.0.1:9",
	"http://127.0.0.1:9/a/../b", "http://Example.COM:80/x", "http://example.com:80/x", " /spaced ", "a\tb",
}

func TestResolveShortcutsMatchNetURL(t *testing.T) {
	for _, b := range resolveBases {
		base, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range resolveRefs {
			if err := checkResolve(base, ref); err != "" {
				t.Error(err)
			}
		}
	}
}

func FuzzResolve(f *testing.F) {
	for _, b := range resolveBases {
		for _, r := range resolveRefs {
			f.Add(b, r)
		}
	}
	f.Fuzz(func(t *testing.T, b, ref string) {
		base, err := url.Parse(b)
		if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
			return
		}
		if s := schemeOf(cleanRef(ref)); s != "" && !webScheme(s) {
			return // rejected before parsing, on purpose
		}
		if err := checkResolve(base, ref); err != "" {
			t.Fatal(err)
		}
	})
}

func TestHasDotSegment(t *testing.T) {
	for p, want := range map[string]bool{
		"": false, "/": false, "/a/b": false, "/a.b/c.": false, "/.hidden": false, "/a/..b": false, "/a/b..": false,
		".": true, "..": true, "./a": true, "../a": true, "/./": true, "/a/../b": true, "/a/.": true, "/a/..": true, "/a//b": true,
	} {
		if got := hasDotSegment(p); got != want {
			t.Errorf("hasDotSegment(%q) = %v", p, got)
		}
	}
}
