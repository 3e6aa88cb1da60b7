package spider

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/gocrawl/gocrawl/spider/linkextract"
)

const scanPage = `<!DOCTYPE html><html><head><title> Shop &amp; more </title></head><body>
<ul class="links"><li><a href="/p/1">one</a></li><li><a href="p/2">two</a></li></ul>
<p><a href="https://example.com/p/3">three</a></p></body></html>`

func scanResponse(t *testing.T, contentType, body string) *Response {
	t.Helper()
	u, err := url.Parse("https://example.com/shop/")
	if err != nil {
		t.Fatal(err)
	}
	return &Response{URL: u, Status: 200, Request: &Request{URL: u}, Body: []byte(body),
		Header: http.Header{"Content-Type": {contentType}}}
}

// TestFollowRulesScanOrParse checks which rules read the page with the
// tokenizer (no tree) and which parse it, and that both send the same
// requests.
func TestFollowRulesScanOrParse(t *testing.T) {
	noop := func(context.Context, *Response, Output) error { return nil }
	tests := []struct {
		name      string
		rule      Rule
		wantParse bool
		want      []string
	}{
		{"default extractor", Rule{Callback: noop}, false, []string{"/p/1", "/shop/p/2", "/p/3"}},
		{"allow pattern", Rule{Extractor: linkextract.MustNew(linkextract.Options{Allow: []string{`/p/[12]$`}})}, false, []string{"/p/1", "/shop/p/2"}},
		{"CSS region", Rule{Extractor: linkextract.MustNew(linkextract.Options{RestrictCSS: []string{"ul.links"}})}, true, []string{"/p/1", "/shop/p/2"}},
		{"link text", Rule{Extractor: linkextract.MustNew(linkextract.Options{RestrictText: []string{"^t"}})}, true, []string{"/shop/p/2", "/p/3"}},
		{"ProcessLinks", Rule{ProcessLinks: func(_ *Response, l []linkextract.Link) []linkextract.Link { return l[:1] }}, true, []string{"/p/1"}},
		{"ProcessRequest", Rule{ProcessRequest: func(r *Request, _ linkextract.Link, _ *Response) *Request { return r }}, true, []string{"/p/1", "/shop/p/2", "/p/3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &CrawlSpider{Rules: []Rule{tt.rule}}
			res := scanResponse(t, "text/html; charset=utf-8", scanPage)
			var out Recorder
			if err := c.FollowRules(context.Background(), res, &out); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range out.Requests {
				got = append(got, r.URL.Path)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("requests %q, want %q", got, tt.want)
			}
			if res.parsed.Load() != tt.wantParse {
				t.Errorf("page parsed into a tree: %v, want %v", res.parsed.Load(), tt.wantParse)
			}
			if title, err := res.Title(); err != nil || title != "Shop & more" {
				t.Errorf("Title() = %q, %v", title, err)
			}
		})
	}
}

func TestResponseTitle(t *testing.T) {
	t.Run("scan, then Doc", func(t *testing.T) {
		res := scanResponse(t, "text/html", scanPage)
		if title, err := res.Title(); err != nil || title != "Shop & more" {
			t.Fatalf("Title() = %q, %v", title, err)
		}
		if res.parsed.Load() {
			t.Fatal("Title parsed the page into a tree")
		}
		if n := res.Find("a").Length(); n != 3 {
			t.Errorf("Doc after a scan finds %d links", n)
		}
	})
	t.Run("Doc, then the tree's title", func(t *testing.T) {
		res := scanResponse(t, "text/html", scanPage)
		if _, err := res.Doc(); err != nil {
			t.Fatal(err)
		}
		d, err := res.scanDocument()
		if err != nil || d.Flat() {
			t.Fatalf("after Doc, links come from a scan (%v)", err)
		}
		if title, _ := res.Title(); title != "Shop & more" {
			t.Errorf("Title() = %q", title)
		}
	})
	t.Run("windows-1252 goes through Doc", func(t *testing.T) {
		res := scanResponse(t, "text/html; charset=windows-1252", "<title>caf\xe9</title><a href=/x>x</a>")
		if title, err := res.Title(); err != nil || title != "café" {
			t.Errorf("Title() = %q, %v", title, err)
		}
	})
	t.Run("not HTML", func(t *testing.T) {
		res := scanResponse(t, "application/json", `{"a": 1}`)
		if _, err := res.Title(); !errors.Is(err, ErrNotHTML) {
			t.Errorf("Title() error %v, want ErrNotHTML", err)
		}
	})
}
