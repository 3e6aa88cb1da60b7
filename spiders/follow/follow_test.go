package follow

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/internal/callbacks"

	"github.com/gocrawl/gocrawl/spider"
)

func TestSetArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    map[string]string
		wantErr []string
		check   func(t *testing.T, s *Spider)
	}{
		{"defaults", map[string]string{"start_urls": "https://a.example/x, https://B.example:8080/"}, nil, func(t *testing.T, s *Spider) {
			if s.Follow != DefaultFollow || s.MaxDepth != 0 {
				t.Errorf("follow %q depth %d", s.Follow, s.MaxDepth)
			}
			if got := s.AllowedDomains(); !reflect.DeepEqual(got, []string{"a.example", "b.example"}) {
				t.Errorf("AllowedDomains = %v", got)
			}
		}},
		{"all args", map[string]string{"start_urls": "https://a.example/", "allowed_domains": "Example.com,.other.org",
			"follow": "nav a, a.next", "max_depth": "3"}, nil, func(t *testing.T, s *Spider) {
			if got := s.AllowedDomains(); !reflect.DeepEqual(got, []string{"example.com", "other.org"}) {
				t.Errorf("AllowedDomains = %v", got)
			}
			if s.MaxDepth != 3 || s.Follow != "nav a, a.next" {
				t.Errorf("%+v", s)
			}
		}},
		{"no start urls", map[string]string{}, []string{"no start URLs: pass -a start_urls=URL"}, nil},
		{"bad everything", map[string]string{"start_urls": "ftp://x/,/relative", "max_depth": "-1", "follow": "a[",
			"allowed_domain": "x", "allowed_domains": "http://x.com/,co.uk", "allow": "(", "deny": "[z"},
			[]string{`unknown argument "allowed_domain"`, `max_depth="-1": expected a whole number >= 0`,
				"start_urls:", "ftp://x/", "/relative", `follow="a[" is not a valid CSS selector`,
				`allowed_domains: "http://x.com/" is not a domain`, `allowed_domains: "co.uk": a public suffix`,
				`allow="(" is not a valid regular expression`, `deny="[z" is not a valid regular expression`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			err := s.SetArgs(tt.args)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, s)
				return
			}
			if err == nil {
				t.Fatal("SetArgs succeeded, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func response(t *testing.T, rawURL string, depth int, ctype, body string) *spider.Response {
	t.Helper()
	req := spider.MustRequest(rawURL, nil)
	req.Depth = depth
	return &spider.Response{URL: req.URL, Status: 200, Header: http.Header{"Content-Type": {ctype}}, Body: []byte(body), Request: req}
}

const page = `<html><head><title> Home </title></head><body>
<a href="/in">in</a> <a href="https://sub.a.example/s">sub</a> <a href="https://evil.example/">out</a>
<a href="mailto:x@a.example">mail</a> <a class="next" href="/next">next</a> <img src="/img.png">
<nav><ul><li><a href="/nav1">1</a></li><li><a href="/nav2"><img src="/logo.svg"></a></li></ul></nav>
</body></html>`

func TestParse(t *testing.T) {
	tests := []struct {
		name      string
		args      map[string]string
		depth     int
		wantLinks []string
	}{
		{"follows links inside the start host and its subdomains", map[string]string{"start_urls": "https://a.example/"}, 0,
			[]string{"https://a.example/in", "https://sub.a.example/s", "https://a.example/next", "https://a.example/nav1", "https://a.example/nav2"}},
		{"custom selector", map[string]string{"start_urls": "https://a.example/", "follow": "a.next, img"}, 0,
			[]string{"https://a.example/next"}},
		{"custom selector, every extension", map[string]string{"start_urls": "https://a.example/", "follow": "a.next, img", "deny_extensions": ""}, 0,
			[]string{"https://a.example/next", "https://a.example/img.png", "https://a.example/logo.svg"}},
		{"allow and deny", map[string]string{"start_urls": "https://a.example/", "allow": "a\\.example/", "deny": "/next$"}, 0,
			[]string{"https://a.example/in", "https://sub.a.example/s", "https://a.example/nav1", "https://a.example/nav2"}},
		{"links inside the selected regions", map[string]string{"start_urls": "https://a.example/", "follow": "nav"}, 0,
			[]string{"https://a.example/nav1", "https://a.example/nav2"}},
		{"allowed domains", map[string]string{"start_urls": "https://a.example/", "allowed_domains": "evil.example"}, 0,
			[]string{"https://evil.example/"}},
		{"below max depth", map[string]string{"start_urls": "https://a.example/", "max_depth": "2"}, 1,
			[]string{"https://a.example/in", "https://sub.a.example/s", "https://a.example/next", "https://a.example/nav1", "https://a.example/nav2"}},
		{"at max depth", map[string]string{"start_urls": "https://a.example/", "max_depth": "2"}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			if err := s.SetArgs(tt.args); err != nil {
				t.Fatal(err)
			}
			var out spider.Recorder
			if err := s.Parse(context.Background(), response(t, "https://a.example/", tt.depth, "text/html", page), &out); err != nil {
				t.Fatal(err)
			}
			want := Page{URL: "https://a.example/", Status: 200, Title: "Home", Depth: tt.depth}
			if len(out.Items) != 1 || out.Items[0] != want {
				t.Errorf("items = %+v, want %+v", out.Items, want)
			}
			var links []string
			for _, r := range out.Requests {
				links = append(links, r.URL.String())
				if r.Depth != tt.depth+1 {
					t.Errorf("%s depth %d, want %d", r.URL, r.Depth, tt.depth+1)
				}
			}
			if !slices.Equal(links, tt.wantLinks) {
				t.Errorf("links = %v, want %v", links, tt.wantLinks)
			}
		})
	}
}

func TestParseNonHTML(t *testing.T) {
	s := New()
	if err := s.SetArgs(map[string]string{"start_urls": "https://a.example/"}); err != nil {
		t.Fatal(err)
	}
	var out spider.Recorder
	err := s.Parse(context.Background(), response(t, "https://a.example/x.png", 1, "image/png", "\x89PNG\r\n\x1a\n"), &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 || out.Items[0].(Page).Title != "" || len(out.Requests) != 0 {
		t.Errorf("items %+v requests %v", out.Items, out.Requests)
	}
}

func TestStartIsLazy(t *testing.T) {
	s := New()
	s.StartURLs = []string{"https://a.example/1", "not a url", "https://a.example/3"}
	var got []string
	var errs int
	for req, err := range s.Start(context.Background()) {
		if err != nil {
			errs++
			continue
		}
		got = append(got, req.URL.String())
		if len(got) == 1 {
			break
		}
	}
	if len(got) != 1 || errs != 0 {
		t.Errorf("got %v, %d errors", got, errs)
	}
}

// A page reached through the rule: its item, then its links, one level
// deeper; the rule stops at max_depth.
func TestParseRulePages(t *testing.T) {
	s := New()
	if err := s.SetArgs(map[string]string{"start_urls": "https://a.example/", "max_depth": "2"}); err != nil {
		t.Fatal(err)
	}
	var start spider.Recorder
	if err := s.Parse(context.Background(), response(t, "https://a.example/", 0, "text/html", page), &start); err != nil {
		t.Fatal(err)
	}
	req := start.Requests[0]
	for depth, wantLinks := range map[int]int{1: 5, 2: 0} {
		r := req.Clone()
		r.Depth = depth
		res := &spider.Response{URL: r.URL, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(page), Request: r}
		cb, _, err := callbacks.Callbacks(s, r)
		if err != nil {
			t.Fatal(err)
		}
		var out spider.Recorder
		if err := cb(context.Background(), res, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Items) != 1 || out.Items[0].(Page).Depth != depth || len(out.Requests) != wantLinks {
			t.Errorf("depth %d: items %+v, %d requests, want %d", depth, out.Items, len(out.Requests), wantLinks)
		}
	}
}

// A spider configured through its fields builds its rule in Open.
func TestOpenBuildsTheRule(t *testing.T) {
	s := New()
	s.StartURLs = []string{"https://a.example/"}
	s.Deny = "sub"
	if err := s.Open(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	var out spider.Recorder
	if err := s.Parse(context.Background(), response(t, "https://a.example/", 0, "text/html", page), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Requests) != 4 {
		t.Errorf("requests %v", out.Requests)
	}
	bad := New()
	bad.StartURLs, bad.Allow = []string{"https://a.example/"}, "("
	if err := bad.Open(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "Allow[0]") {
		t.Errorf("err = %v", err)
	}
}
