package middleware

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// cookieServer sets a session cookie on /login (then redirects to /home)
// and echoes the Cookie header elsewhere.
func cookieServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cr3t-" + r.URL.Query().Get("user"), Path: "/"})
			http.Redirect(w, r, "/home", http.StatusFound)
		default:
			fmt.Fprintf(w, "cookie=%s", r.Header.Get("Cookie"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCookiesKeptAcrossRedirectAndRequests(t *testing.T) {
	srv := cookieServer(t)
	c, logs := newCrawler(t, nil, only(map[string]any{"COOKIES_DEBUG": true}, "Redirect", "Cookies"))
	ch := chainFor(t, c, realFetcher())
	ctx := context.Background()

	// The cookie set by the redirect response is sent to the redirect target.
	res, err, _ := follow(ctx, ch, spider.MustRequest(srv.URL+"/login?user=ann", nil), 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Body); got != "cookie=session=s3cr3t-ann" {
		t.Errorf("after login: %q", got)
	}
	// A later request of the default session sends it too.
	res, err = ch.Fetch(ctx, spider.MustRequest(srv.URL+"/other", nil))
	if err != nil || string(res.Body) != "cookie=session=s3cr3t-ann" {
		t.Errorf("later request: %q, %v", res.Body, err)
	}
	// A separate session (cookiejar meta) does not.
	r := spider.MustRequest(srv.URL+"/other", nil).Set(MetaCookieJar, 2)
	res, err = ch.Fetch(ctx, r)
	if err != nil || string(res.Body) != "cookie=" {
		t.Errorf("other session: %q, %v", res.Body, err)
	}
	// dont_merge_cookies sends nothing.
	r = spider.MustRequest(srv.URL+"/other", nil).Set(MetaDontMergeCookies, true)
	if res, _ = ch.Fetch(ctx, r); string(res.Body) != "cookie=" {
		t.Errorf("dont_merge_cookies: %q", res.Body)
	}
	// The cookies meta adds to the jar; an explicit Cookie header is kept.
	r = spider.MustRequest(srv.URL+"/other", nil).Set(MetaCookies, map[string]any{"lang": "fr"}).Set(MetaCookieJar, "b")
	r.Header = http.Header{"Cookie": {"mine=1"}}
	if res, _ = ch.Fetch(ctx, r); string(res.Body) != "cookie=mine=1; lang=fr" {
		t.Errorf("cookies meta + header: %q", res.Body)
	}
	if r.Header.Get("Cookie") != "mine=1" {
		t.Errorf("the request held by outer middlewares was changed: %q", r.Header.Get("Cookie"))
	}
	r = spider.MustRequest(srv.URL+"/other", nil).Set(MetaCookies, map[string]string{"theme": "dark"}).Set(MetaCookieJar, "c")
	if res, _ = ch.Fetch(ctx, r); string(res.Body) != "cookie=theme=dark" {
		t.Errorf("cookies meta as map[string]string: %q", res.Body)
	}
	// COOKIES_DEBUG logs names, never values.
	out := logs.String()
	if !strings.Contains(out, "session=<") || strings.Contains(out, "s3cr3t") {
		t.Errorf("COOKIES_DEBUG log leaks values or misses names:\n%s", out)
	}
}

func TestCookiesNotSentToOtherSites(t *testing.T) {
	a, b := cookieServer(t), cookieServer(t) // same IP, different ports: cookies are per host, not port
	c, _ := newCrawler(t, nil, only(nil, "Cookies"))
	ch := chainFor(t, c, realFetcher())
	ctx := context.Background()
	if _, err := ch.Fetch(ctx, spider.MustRequest(a.URL+"/login?user=x", nil)); err != nil {
		t.Fatal(err)
	}
	// Cookies ignore ports (RFC 6265), so b on the same host gets it...
	res, _ := ch.Fetch(ctx, spider.MustRequest(b.URL+"/", nil))
	if string(res.Body) != "cookie=session=s3cr3t-x" {
		t.Errorf("same host, other port: %q", res.Body)
	}
	// ...but another host name does not.
	res, _ = ch.Fetch(ctx, spider.MustRequest(strings.Replace(b.URL, "127.0.0.1", "localhost", 1)+"/", nil))
	if string(res.Body) != "cookie=" {
		t.Errorf("other host: %q", res.Body)
	}
}

func TestCookiesDisabled(t *testing.T) {
	c, _ := newCrawler(t, nil, only(map[string]any{"COOKIES_ENABLED": false}, "Cookies"))
	ch := chainFor(t, c, statusFetcher(200, nil))
	if len(ch.Names()) != 0 {
		t.Errorf("enabled middlewares = %v", ch.Names())
	}
}
