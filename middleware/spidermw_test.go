package middleware

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocrawl/gocrawl/spider"
)

// handleWith runs the spider chain made of the named spider middlewares
// around a callback that emits the given links, and returns what came out.
func handleWith(t *testing.T, sp spider.Spider, set map[string]any, names map[string]any, res *spider.Response, links []string, reqs ...*spider.Request) (*spider.Recorder, error, *spider.Crawler) {
	t.Helper()
	if set == nil {
		set = map[string]any{}
	}
	set["SPIDER_MIDDLEWARES_BASE"] = names
	c, _ := newCrawler(t, sp, set)
	h, _, err := BuildSpider(c, HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
		for _, l := range links {
			out.Follow(res, l, nil)
		}
		for _, r := range reqs {
			out.Request(r)
		}
		out.Item("item")
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	var out spider.Recorder
	err = h.Handle(context.Background(), res, &out)
	return &out, err, c
}

func response(rawURL string, status int, hdr http.Header) *spider.Response {
	req := spider.MustRequest(rawURL, nil)
	if hdr == nil {
		hdr = http.Header{}
	}
	return &spider.Response{URL: req.URL, Status: status, Header: hdr, Request: req}
}

func TestHTTPError(t *testing.T) {
	tests := []struct {
		name   string
		set    map[string]any
		sp     spider.Spider
		meta   map[string]any
		status int
		pass   bool
	}{
		{name: "200", status: 200, pass: true},
		{name: "204", status: 204, pass: true},
		{name: "404", status: 404},
		{name: "503 after retries", status: 503},
		{name: "302 not followed", status: 302},
		{name: "HTTPERROR_ALLOWED_CODES", set: map[string]any{"HTTPERROR_ALLOWED_CODES": []int{404}}, status: 404, pass: true},
		{name: "HTTPERROR_ALLOW_ALL", set: map[string]any{"HTTPERROR_ALLOW_ALL": true}, status: 500, pass: true},
		{name: "handle_httpstatus_list", meta: map[string]any{MetaHandleHTTPStatusList: []any{410}}, status: 410, pass: true},
		{name: "handle_httpstatus_list other", meta: map[string]any{MetaHandleHTTPStatusList: []any{410}}, status: 404},
		{name: "handle_httpstatus_all", meta: map[string]any{MetaHandleHTTPStatusAll: true}, status: 500, pass: true},
		{name: "spider list", sp: &statusListSpider{codes: []int{404}}, status: 404, pass: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := response("http://127.0.0.1/p", tt.status, nil)
			for k, v := range tt.meta {
				res.Request.Set(k, v)
			}
			out, err, c := handleWith(t, tt.sp, tt.set, map[string]any{"HttpError": 50}, res, nil)
			if tt.pass {
				if err != nil || len(out.Items) != 1 {
					t.Errorf("err %v, items %v: want the callback to run", err, out.Items)
				}
				return
			}
			var he *StatusError
			var d *DropError
			if !errors.As(err, &d) || d.Reason != "httperror" || !errors.As(err, &he) || he.Response != res {
				t.Fatalf("error = %v, want a httperror drop carrying the response", err)
			}
			if len(out.Items) != 0 {
				t.Error("callback ran")
			}
			if c.Stats.Get("httperror/response_ignored_count") != 1 || c.Stats.Get("httperror/response_ignored_status_count/"+strconv.Itoa(tt.status)) != 1 {
				t.Errorf("stats = %v", c.Stats.Snapshot())
			}
		})
	}
}

func TestParseAllowedDomains(t *testing.T) {
	tests := []struct {
		in      []string
		want    string
		wantErr string
	}{
		{in: []string{"Example.COM.", "", "bücher.example"}, want: "example.com xn--bcher-kva.example"},
		{in: []string{"127.0.0.1", "[::1]"}, want: "127.0.0.1 ::1"},
		{in: []string{"https://example.com/"}, wantErr: `allowed domain "https://example.com/": want a domain`},
		{in: []string{"example.com:8080"}, wantErr: `allowed domain "example.com:8080": ports are not allowed`},
		{in: []string{"co.uk"}, wantErr: `allowed domain "co.uk" is a public suffix`},
		{in: []string{"com"}, wantErr: `allowed domain "com" is a public suffix`},
		{in: []string{"example.co.uk", "github.io"}, want: "example.co.uk github.io"}, // private suffixes are allowed
		{in: []string{"localhost", "intranet"}, want: "localhost intranet"},           // single-label hosts are hosts, not suffixes
	}
	for _, tt := range tests {
		got, err := ParseAllowedDomains(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("%v = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestOffsite(t *testing.T) {
	sp := &testSpider{Base: spider.Base{Domains: []string{"example.com", "127.0.0.1", "bücher.example"}}}
	res := response("http://www.example.com/", 200, nil)
	links := []string{
		"http://example.com/a", "http://sub.www.example.com/b", "HTTP://WWW.EXAMPLE.COM./c", "http://127.0.0.1:8080/d",
		"http://xn--bcher-kva.example/e", "http://BÜCHER.example/f",
		"http://badexample.com/x", "http://example.com.evil.net/x", "http://other.org/x", "http://127.0.0.2/x",
	}
	allowed := spider.MustRequest("http://other.org/allowed", nil).Set(MetaAllowOffsite, true)
	out, err, c := handleWith(t, sp, nil, map[string]any{"Offsite": 500}, res, links, allowed)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Requests {
		got = append(got, r.URL.Path)
	}
	if strings.Join(got, " ") != "/a /b /c /d /e /f /allowed" {
		t.Errorf("kept %v", got)
	}
	if c.Stats.Get("offsite/filtered") != 4 || c.Stats.Get("offsite/domains") != 4 {
		t.Errorf("stats = %v", c.Stats.Snapshot())
	}

	// Downloader side: start requests and redirect hops.
	c2, _ := newCrawler(t, sp, only(nil, "Offsite"))
	ch := chainFor(t, c2, statusFetcher(200, nil))
	if _, err := ch.Fetch(context.Background(), spider.MustRequest("http://www.example.com/", nil)); err != nil {
		t.Errorf("allowed request: %v", err)
	}
	_, err = ch.Fetch(context.Background(), spider.MustRequest("http://other.org/", nil))
	var d *DropError
	if !errors.As(err, &d) || d.Reason != "offsite" {
		t.Errorf("offsite request: %v", err)
	}
}

func TestOffsiteWithoutDomainsIsOff(t *testing.T) {
	c, _ := newCrawler(t, &testSpider{}, only(nil, "Offsite"))
	if ch := chainFor(t, c, statusFetcher(200, nil)); len(ch.Names()) != 0 {
		t.Errorf("Offsite enabled without allowed domains: %v", ch.Names())
	}
	c, _ = newCrawler(t, &testSpider{Base: spider.Base{Domains: []string{"http://x.com"}}}, only(nil, "Offsite"))
	if _, err := NewDownloaderChain(c, statusFetcher(200, nil)); err == nil || !strings.Contains(err.Error(), "DOWNLOADER_MIDDLEWARES: Offsite: allowed domain") {
		t.Errorf("bad allowed domain: %v", err)
	}
}

func TestDepthAndURLLength(t *testing.T) {
	res := response("http://127.0.0.1/", 200, nil)
	res.Request.Depth = 2
	long := "/" + strings.Repeat("x", 100)
	manual := spider.MustRequest("http://127.0.0.1/manual", nil) // built with NewRequest: depth 0
	out, err, c := handleWith(t, nil, map[string]any{"DEPTH_STATS_VERBOSE": true, "URLLENGTH_LIMIT": 50},
		map[string]any{"Depth": 900, "UrlLength": 800}, res, []string{"/a", long}, manual)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Requests) != 2 || out.Requests[0].Depth != 3 || out.Requests[1].Depth != 3 {
		t.Fatalf("requests %v", out.Requests)
	}
	for k, want := range map[string]float64{"request_depth_max": 3, "request_depth_count/3": 3, "urllength/request_ignored_count": 1} {
		if got := c.Stats.Get(k); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
}

func TestReferrerPolicies(t *testing.T) {
	from, _ := url.Parse("https://user:pw@a.example/page?q=1#frag")
	sameHTTPS, _ := url.Parse("https://a.example/next")
	crossHTTPS, _ := url.Parse("https://b.example/next")
	downgrade, _ := url.Parse("http://a.example/next")
	full, origin := "https://a.example/page?q=1", "https://a.example/"
	tests := []struct {
		policy                 string
		same, cross, downgrade string
	}{
		{"no-referrer", "", "", ""},
		{"no-referrer-when-downgrade", full, full, ""},
		{"same-origin", full, "", ""},
		{"origin", origin, origin, origin},
		{"strict-origin", origin, origin, ""},
		{"origin-when-cross-origin", full, origin, origin},
		{"strict-origin-when-cross-origin", full, origin, ""},
		{"unsafe-url", full, full, full},
		{"scrapy-default", full, full, ""},
	}
	for _, tt := range tests {
		p, err := parseReferrerPolicy(tt.policy)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			to   *url.URL
			want string
		}{{sameHTTPS, tt.same}, {crossHTTPS, tt.cross}, {downgrade, tt.downgrade}} {
			if got := p.referrer(newPageReferrer(from), c.to); got != c.want {
				t.Errorf("%s to %s: %q, want %q", tt.policy, c.to, got, c.want)
			}
		}
	}
}

func TestRefererMiddleware(t *testing.T) {
	res := response("https://a.example/page", 200, nil)
	kept := spider.MustRequest("https://a.example/k", nil)
	kept.Header = http.Header{"Referer": {"mine"}}
	perRequest := spider.MustRequest("https://b.example/p", nil).Set(MetaReferrerPolicy, "origin")
	out, _, _ := handleWith(t, nil, nil, map[string]any{"Referer": 700}, res, []string{"/x", "http://a.example/insecure"}, kept, perRequest)
	want := []string{"https://a.example/page", "", "mine", "https://a.example/"}
	for i, r := range out.Requests {
		if got := r.RefererHeader(); got != want[i] {
			t.Errorf("%s: Referer %q, want %q", r.URL, got, want[i])
		}
		if r != kept && r.Header != nil {
			t.Errorf("%s: a header map %v for the Referer; want the Referer field only", r.URL, r.Header)
		}
	}
	if out.Requests[2].Referer != "" {
		t.Errorf("a request with its own Referer header got the field too: %q", out.Requests[2].Referer)
	}
	// The links of one page share its referrer string: a queued request
	// holds a string header, not a copy of the page's URL.
	out, _, _ = handleWith(t, nil, nil, map[string]any{"Referer": 700}, res, []string{"/x", "/y", "/z"})
	if len(out.Requests) != 3 {
		t.Fatalf("%d requests, want 3", len(out.Requests))
	}
	for _, r := range out.Requests[1:] {
		if r.Referer != out.Requests[0].Referer || unsafe.StringData(r.Referer) != unsafe.StringData(out.Requests[0].Referer) {
			t.Errorf("%s: Referer %q not shared with the page's other links", r.URL, r.Referer)
		}
	}
	// The page's Referrer-Policy header wins over the setting.
	res = response("https://a.example/page", 200, http.Header{"Referrer-Policy": {"bogus, no-referrer"}})
	out, _, _ = handleWith(t, nil, nil, map[string]any{"Referer": 700}, res, []string{"/x"})
	if got := out.Requests[0].RefererHeader(); got != "" {
		t.Errorf("Referrer-Policy: no-referrer ignored: %q", got)
	}
}
