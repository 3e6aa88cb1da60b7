package spider

import (
	"net/http"
	"net/url"
	"testing"
	"unicode/utf8"
)

// FuzzResponseText: any body with any Content-Type decodes to valid UTF-8
// or gives an error, and parsing it as HTML never panics.
func FuzzResponseText(f *testing.F) {
	f.Add("text/html; charset=shift_jis", []byte("\x82\xa0<html><a href=x>"))
	f.Add("text/html", []byte(`<meta charset="utf-16"><p>\xff\xfe`))
	f.Add("text/plain; charset=bogus", []byte("\xef\xbb\xbfhello"))
	f.Add("", []byte("\xfe\xff\x00<\x00h"))
	f.Add("application/xml; charset=\"iso-8859-1\"", []byte("<?xml version='1.0' encoding='koi8-r'?><a>\xe9</a>"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		u, _ := url.Parse("http://a.test/p")
		r := &Response{URL: u, Status: 200, Header: http.Header{"Content-Type": {ct}}, Body: body}
		if text, err := r.Text(); err == nil && !utf8.ValidString(text) {
			t.Fatalf("Text() is not valid UTF-8 for %q", ct)
		}
		_ = r.IsHTML()
		_ = r.ContentType()
		_, _ = r.Doc()
	})
}

// FuzzFollowLinks: links extracted from any page resolve to absolute
// http(s) URLs with a host, or are reported as invalid; never a panic.
func FuzzFollowLinks(f *testing.F) {
	f.Add(`<base href="//evil.test/x/"><a href="../a?b#c">x</a><a href="javascript:alert(1)">`, "http://a.test/p/q")
	f.Add(`<a href=" http://[::1]:80/%zz "><a href="mailto:x"><img src="data:x"><a href="\\\\evil">`, "https://a.test")
	f.Add(`<a href="http://a.test:99999/"><a href="http://%41/"><a href="">`, "http://a.test/")
	f.Fuzz(func(t *testing.T, html, base string) {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return
		}
		r := &Response{URL: u, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(html)}
		doc, err := r.Doc()
		if err != nil {
			return
		}
		var out Recorder
		out.FollowAll(r, doc.Find("a, img"), nil)
		for _, req := range out.Requests {
			if (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" || req.URL.Fragment != "" {
				t.Fatalf("followed %q from %q", req.URL, html)
			}
		}
	})
}
