package middleware

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// redirectOnce answers status with Location loc (and extra headers).
func redirectOnce(status int, loc string, extra http.Header) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		h := http.Header{"Location": {loc}}
		for k, v := range extra {
			h[k] = v
		}
		return &spider.Response{URL: req.URL, Status: status, Header: h, Request: req}, nil
	})
}

func fetchRedirect(t *testing.T, set map[string]any, sp spider.Spider, inner Fetcher, req *spider.Request) (*spider.Request, *spider.Response, error) {
	t.Helper()
	c, _ := newCrawler(t, sp, only(set, "Redirect"))
	ch := chainFor(t, c, inner)
	res, err := ch.Fetch(context.Background(), req)
	var rs *RescheduleError
	if errors.As(err, &rs) {
		if rs.Reason != "redirect" || len(rs.Requests) != 1 {
			t.Fatalf("reschedule = %+v", rs)
		}
		return rs.Requests[0], nil, nil
	}
	return nil, res, err
}

func TestRedirectMethodAndBody(t *testing.T) {
	tests := []struct {
		status     int
		method     string
		wantMethod string
		wantBody   bool
	}{
		{301, "GET", "GET", false},
		{301, "POST", "GET", false},
		{302, "POST", "GET", false},
		{302, "PUT", "PUT", true},
		{303, "POST", "GET", false},
		{303, "PUT", "GET", false},
		{303, "HEAD", "HEAD", false},
		{307, "POST", "POST", true},
		{308, "POST", "POST", true},
		{308, "DELETE", "DELETE", true},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status)+" "+tt.method, func(t *testing.T) {
			req := spider.MustRequest("http://127.0.0.1:1/form", nil)
			req.Method = tt.method
			if tt.method != "HEAD" && tt.method != "GET" {
				req.Body = []byte("a=1")
				req.Header = http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			}
			nr, _, err := fetchRedirect(t, nil, nil, redirectOnce(tt.status, "/done#frag", nil), req)
			if err != nil || nr == nil {
				t.Fatalf("no redirect: %v", err)
			}
			if nr.EffectiveMethod() != tt.wantMethod {
				t.Errorf("method = %s, want %s", nr.EffectiveMethod(), tt.wantMethod)
			}
			if hasBody := len(nr.Body) > 0; hasBody != tt.wantBody && (tt.wantBody || len(req.Body) > 0) {
				t.Errorf("body kept = %v, want %v", hasBody, tt.wantBody)
			}
			if !tt.wantBody && nr.Header.Get("Content-Type") != "" {
				t.Error("Content-Type kept on a body-less redirect")
			}
			if nr.URL.String() != "http://127.0.0.1:1/done" {
				t.Errorf("URL = %s", nr.URL)
			}
			if nr.Priority != 2 {
				t.Errorf("priority = %d, want REDIRECT_PRIORITY_ADJUST 2", nr.Priority)
			}
			reasons, _ := nr.Get(MetaRedirectReasons).([]any)
			if len(reasons) != 1 || reasons[0] != tt.status {
				t.Errorf("redirect_reasons = %v", reasons)
			}
		})
	}
}

type statusListSpider struct {
	testSpider
	codes []int
}

func (s *statusListSpider) HandleHTTPStatusList() []int { return s.codes }

func TestRedirectNotFollowed(t *testing.T) {
	tests := []struct {
		name   string
		sp     spider.Spider
		meta   map[string]any
		set    map[string]any
		status int
		loc    string
	}{
		{name: "dont_redirect", meta: map[string]any{MetaDontRedirect: true}, status: 302, loc: "/x"},
		{name: "handle_httpstatus_list meta", meta: map[string]any{MetaHandleHTTPStatusList: []any{301.0}}, status: 301, loc: "/x"},
		{name: "handle_httpstatus_all", meta: map[string]any{MetaHandleHTTPStatusAll: true}, status: 301, loc: "/x"},
		{name: "spider status list", sp: &statusListSpider{codes: []int{302}}, status: 302, loc: "/x"},
		{name: "no Location", status: 302, loc: ""},
		{name: "not a redirect status", status: 304, loc: "/x"},
		{name: "REDIRECT_ENABLED false", set: map[string]any{"REDIRECT_ENABLED": false}, status: 302, loc: "/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := spider.MustRequest("http://127.0.0.1:1/", nil)
			for k, v := range tt.meta {
				req.Set(k, v)
			}
			var inner Fetcher = redirectOnce(tt.status, tt.loc, nil)
			if tt.loc == "" {
				inner = statusFetcher(tt.status, nil)
			}
			nr, res, err := fetchRedirect(t, tt.set, tt.sp, inner, req)
			if nr != nil || err != nil || res == nil || res.Status != tt.status {
				t.Errorf("got redirect %v, err %v; want the %d response passed on", nr, err, tt.status)
			}
		})
	}
}

func TestRedirectDrops(t *testing.T) {
	tests := []struct {
		name   string
		meta   map[string]any
		loc    string
		reason string
	}{
		{name: "non-http scheme", loc: "ftp://127.0.0.1/file", reason: "redirect_unsupported_scheme"},
		{name: "javascript", loc: "javascript:alert(1)", reason: "redirect_unsupported_scheme"},
		{name: "invalid", loc: "http://[::1", reason: "redirect_bad_location"},
		{name: "max times", meta: map[string]any{MetaRedirectTimes: 20.0}, loc: "/next", reason: "redirect_max_times"},
		{name: "ttl used up", meta: map[string]any{MetaRedirectTTL: 0}, loc: "/next", reason: "redirect_max_times"},
		{name: "loop", meta: map[string]any{MetaRedirectURLs: []any{"http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "http://127.0.0.1:1/a"}}, loc: "/a", reason: "redirect_loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := spider.MustRequest("http://127.0.0.1:1/b", nil)
			for k, v := range tt.meta {
				req.Set(k, v)
			}
			_, _, err := fetchRedirect(t, nil, nil, redirectOnce(302, tt.loc, nil), req)
			var d *DropError
			if !errors.As(err, &d) || d.Reason != tt.reason {
				t.Errorf("error = %v, want a drop with reason %s", err, tt.reason)
			}
		})
	}
}

func TestRedirectChainAndBounceAllowed(t *testing.T) {
	// A -> B -> A (a cookie bounce) is fine; a third visit is a loop.
	req := spider.MustRequest("http://127.0.0.1:1/a", nil)
	nr, _, err := fetchRedirect(t, nil, nil, redirectOnce(302, "/b", nil), req)
	if err != nil {
		t.Fatal(err)
	}
	nr2, _, err := fetchRedirect(t, nil, nil, redirectOnce(302, "/a", nil), nr)
	if err != nil || nr2 == nil {
		t.Fatalf("bounce back to /a refused: %v", err)
	}
	if n, _ := metaInt(nr2, MetaRedirectTimes); n != 2 {
		t.Errorf("redirect_times = %v", nr2.Get(MetaRedirectTimes))
	}
	if ttl, _ := metaInt(nr2, MetaRedirectTTL); ttl != 18 {
		t.Errorf("redirect_ttl = %v, want 18", nr2.Get(MetaRedirectTTL))
	}
	if urls := metaList(nr2, MetaRedirectURLs); len(urls) != 2 || urls[0] != "http://127.0.0.1:1/a" || urls[1] != "http://127.0.0.1:1/b" {
		t.Errorf("redirect_urls = %v", urls)
	}
}

func TestRedirectHeadersAcrossHosts(t *testing.T) {
	base := func() *spider.Request {
		r := spider.MustRequest("https://a.example/x", nil)
		r.Header = http.Header{"Cookie": {"s=1"}, "Authorization": {"Basic eDp5"}, "Referer": {"https://a.example/from?q=1"}}
		r.Set(MetaHTTPUser, "u").Set(MetaHTTPPass, "p")
		r.Set(MetaProxy, "http://proxy:3128").Set(metaSchemeProxy, true)
		return r
	}
	tests := []struct {
		loc                    string
		cookie, auth, metaUser bool
		proxy                  bool
		referer                string
	}{
		{loc: "https://a.example/y", cookie: true, auth: true, metaUser: true, proxy: true, referer: "https://a.example/from?q=1"},
		{loc: "https://b.example/y", proxy: true, referer: "https://a.example/from?q=1"},
		{loc: "http://a.example/y", cookie: true, metaUser: true, referer: ""}, // downgrade: no Referer
	}
	for _, tt := range tests {
		t.Run(tt.loc, func(t *testing.T) {
			nr, _, err := fetchRedirect(t, nil, nil, redirectOnce(302, tt.loc, nil), base())
			if err != nil {
				t.Fatal(err)
			}
			if got := nr.Header.Get("Cookie") != ""; got != tt.cookie {
				t.Errorf("Cookie kept = %v, want %v", got, tt.cookie)
			}
			if got := nr.Header.Get("Authorization") != ""; got != tt.auth {
				t.Errorf("Authorization kept = %v, want %v", got, tt.auth)
			}
			if got := nr.Get(MetaHTTPUser) != nil; got != tt.metaUser {
				t.Errorf("http_user kept = %v, want %v", got, tt.metaUser)
			}
			if got := nr.Get(MetaProxy) != nil; got != tt.proxy {
				t.Errorf("environment proxy kept = %v, want %v", got, tt.proxy)
			}
			if got := nr.Header.Get("Referer"); got != tt.referer {
				t.Errorf("Referer = %q, want %q", got, tt.referer)
			}
			// The same with the Referer in the request's field (as the
			// Referer middleware sets it): recomputed there, no header.
			r := base()
			r.Header.Del("Referer")
			r.Referer = "https://a.example/from?q=1"
			nr, _, err = fetchRedirect(t, nil, nil, redirectOnce(302, tt.loc, nil), r)
			if err != nil {
				t.Fatal(err)
			}
			if got := nr.RefererHeader(); got != tt.referer || nr.Header.Get("Referer") != "" {
				t.Errorf("Referer field = %q (header %q), want %q in the field", got, nr.Header.Get("Referer"), tt.referer)
			}
		})
	}
}

func TestRedirectRetryAfterBecomesThrottlingDelay(t *testing.T) {
	tests := []struct {
		retryAfter string
		want       any
	}{
		{"5", 5.0},
		{"600", 60.0}, // capped by REDIRECT_MAX_DELAY
		{"", nil},
		{"soon", nil},
	}
	for _, tt := range tests {
		req := spider.MustRequest("http://127.0.0.1:1/", nil)
		req.Set(throttling.MetaDelay, 1.0)
		throttling.TakeRequestDelay(req) // the original's delay was applied; copies keep the mark
		nr, _, err := fetchRedirect(t, nil, nil, redirectOnce(307, "/later", http.Header{"Retry-After": {tt.retryAfter}}), req)
		if err != nil {
			t.Fatal(err)
		}
		if tt.want == nil {
			if got := throttling.TakeRequestDelay(nr); got != 0 {
				t.Errorf("Retry-After %q: the redirect waits %v again", tt.retryAfter, got)
			}
			continue
		}
		if got := nr.Get(throttling.MetaDelay); got != tt.want {
			t.Errorf("Retry-After %q: throttling_delay = %v, want %v", tt.retryAfter, got, tt.want)
		}
		if got := throttling.TakeRequestDelay(nr); got != time.Duration(tt.want.(float64)*float64(time.Second)) {
			t.Errorf("Retry-After %q: the new delay is not applied (TakeRequestDelay = %v)", tt.retryAfter, got)
		}
	}
}

func TestParseRetryAfterDate(t *testing.T) {
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d, ok := parseRetryAfter(date.Add(90*time.Second).Format(http.TimeFormat), date.Format(http.TimeFormat), time.Now())
	if !ok || d != 90*time.Second {
		t.Errorf("parseRetryAfter = %v, %v; want 90s", d, ok)
	}
}

func TestParseRefresh(t *testing.T) {
	tests := []struct {
		in    string
		delay time.Duration
		url   string
		ok    bool
	}{
		{"5; url=/next", 5 * time.Second, "/next", true},
		{"0;URL='http://127.0.0.1/x'", 0, "http://127.0.0.1/x", true},
		{"3, /y", 3 * time.Second, "/y", true},
		{"1.5; url = \"/z\"", 1500 * time.Millisecond, "/z", true},
		{"10", 0, "", false},
		{"url=/x", 0, "", false},
		{"", 0, "", false},
	}
	for _, tt := range tests {
		d, u, ok := parseRefresh(tt.in)
		if d != tt.delay || u != tt.url || ok != tt.ok {
			t.Errorf("parseRefresh(%q) = %v, %q, %v; want %v, %q, %v", tt.in, d, u, ok, tt.delay, tt.url, tt.ok)
		}
	}
}

func TestMetaRefresh(t *testing.T) {
	page := func(body string, hdr http.Header) Fetcher {
		return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
			h := http.Header{"Content-Type": {"text/html"}}
			for k, v := range hdr {
				h[k] = v
			}
			return &spider.Response{URL: req.URL, Status: 200, Header: h, Body: []byte(body), Request: req}, nil
		})
	}
	tests := []struct {
		name      string
		body      string
		hdr       http.Header
		method    string
		wantURL   string
		wantDelay any
	}{
		{name: "meta tag", body: `<html><head><meta http-equiv="Refresh" content="2; url=/moved"></head></html>`, wantURL: "http://127.0.0.1:1/moved", wantDelay: 2.0},
		{name: "immediate", body: `<meta http-equiv="refresh" content="0;url=http://127.0.0.1:1/now">`, wantURL: "http://127.0.0.1:1/now"},
		{name: "Refresh header", hdr: http.Header{"Refresh": {"1; url=/h"}}, body: "<p>x</p>", wantURL: "http://127.0.0.1:1/h", wantDelay: 1.0},
		{name: "too long a delay", body: `<meta http-equiv="refresh" content="500; url=/later">`},
		{name: "no URL", body: `<meta http-equiv="refresh" content="30">`},
		{name: "HEAD", method: "HEAD", body: `<meta http-equiv="refresh" content="0;url=/x">`},
		{name: "not html", hdr: http.Header{"Content-Type": {"application/json"}}, body: `{"a": "<meta http-equiv=refresh content='0;url=/x'>"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCrawler(t, nil, only(nil, "MetaRefresh"))
			ch := chainFor(t, c, page(tt.body, tt.hdr))
			req := spider.MustRequest("http://127.0.0.1:1/page", nil)
			req.Method = tt.method
			res, err := ch.Fetch(context.Background(), req)
			var rs *RescheduleError
			if !errors.As(err, &rs) {
				if tt.wantURL != "" {
					t.Fatalf("not followed: %v", err)
				}
				if err != nil || res.Status != 200 {
					t.Fatalf("got %v, %v; want the page passed on", res, err)
				}
				return
			}
			nr := rs.Requests[0]
			if nr.URL.String() != tt.wantURL || nr.EffectiveMethod() != "GET" {
				t.Errorf("refresh to %s %s, want GET %s", nr.EffectiveMethod(), nr.URL, tt.wantURL)
			}
			if got := nr.Get(throttling.MetaDelay); got != tt.wantDelay {
				t.Errorf("throttling_delay = %v, want %v", got, tt.wantDelay)
			}
			if r := metaList(nr, MetaRedirectReasons); len(r) != 1 || r[0] != "meta refresh" {
				t.Errorf("redirect_reasons = %v", r)
			}
		})
	}
}

func TestRedirectFollowsRealServer(t *testing.T) {
	// End to end through a real HTTP exchange: POST /login -> 303 -> GET /home.
	srv := newEchoServer(t)
	req := spider.MustRequest(srv.URL+"/login", nil)
	req.Method, req.Body = "POST", []byte("user=a")
	c, _ := newCrawler(t, nil, only(nil, "Redirect"))
	ch := chainFor(t, c, realFetcher())
	res, err, seen := follow(context.Background(), ch, req, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || !strings.Contains(string(res.Body), "GET /home body=") || strings.Contains(string(res.Body), "user=a") {
		t.Errorf("final response %q after %d requests", res.Body, len(seen))
	}
}

func TestContainsFold(t *testing.T) {
	for _, tt := range []struct {
		b, sub string
		want   bool
	}{
		{`<META HTTP-EQUIV="Refresh">`, "http-equiv", true},
		{"xx refresh", "refresh", true},
		{"refres", "refresh", false},
		{"", "a", false},
		{"hhttp-equiv", "http-equiv", true},
		{"Http-equi", "http-equiv", false},
		{"hHtTp-EqUiV", "http-equiv", true},
		{"-http-equiv", "-", true},
		{"123", "3", true},
		{"HHHHr", "hr", true},
		{"abc", "", true},
	} {
		if got := containsFold([]byte(tt.b), tt.sub); got != tt.want {
			t.Errorf("containsFold(%q, %q) = %v", tt.b, tt.sub, got)
		}
	}
}

func TestHugeServerDelaysSaturate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, v := range []string{"1e300", "10000000000", "9223372037"} {
		d, ok := parseRetryAfter(v, "", now)
		if !ok || d <= 24*time.Hour {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want a huge positive delay (no overflow)", v, d, ok)
		}
	}
	for _, v := range []string{"10000000000; url=/next", "99999999999999999999, /x", "9223372037.5;URL=/x"} {
		d, u, ok := parseRefresh(v)
		if !ok || u == "" || d <= 24*time.Hour {
			t.Errorf("parseRefresh(%q) = %v, %q, %v; want a huge positive delay (no overflow)", v, d, u, ok)
		}
	}
}
