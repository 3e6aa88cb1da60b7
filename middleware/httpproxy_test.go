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

// proxyServer answers proxied requests itself, reporting the absolute URL
// it was asked for and the proxy credentials it got.
func proxyServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proxied %s auth=%s", r.URL.String(), r.Header.Get("Proxy-Authorization"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPProxyMeta(t *testing.T) {
	proxy := proxyServer(t)
	c, logs := newCrawler(t, nil, only(nil, "HttpProxy"))
	ch := chainFor(t, c, realFetcher())
	u := strings.Replace(proxy.URL, "http://", "http://bob:hunter2@", 1)
	r := spider.MustRequest("http://example.test/page", nil).Set(MetaProxy, u)
	res, err := ch.Fetch(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Body); !strings.HasPrefix(got, "proxied http://example.test/page auth=Basic ") {
		t.Errorf("proxy saw %q", got)
	}

	// Invalid proxy meta: an error that names it without the password.
	r = spider.MustRequest("http://example.test/page", nil).Set(MetaProxy, "bob:hunter2@:nope")
	_, err = ch.Fetch(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), "invalid proxy meta") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error = %v", err)
	}
	if strings.Contains(logs.String(), "hunter2") {
		t.Errorf("password logged: %s", logs)
	}
}

func TestHTTPProxyFromEnvironment(t *testing.T) {
	proxy := proxyServer(t)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "skip.test")
	t.Setenv("no_proxy", "skip.test")
	c, _ := newCrawler(t, nil, only(nil, "HttpProxy"))
	ch := chainFor(t, c, FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		return &spider.Response{URL: req.URL, Status: 200, Request: req, Header: http.Header{}, Body: []byte(fmt.Sprint(req.Get(MetaProxy)))}, nil
	}))
	for _, tt := range []struct{ url, want string }{
		{"http://example.test/", proxy.URL},
		{"http://skip.test/", "<nil>"},
		{"http://127.0.0.1:1/", "<nil>"}, // loopback is never proxied
		{"https://example.test/", "<nil>"},
	} {
		r := spider.MustRequest(tt.url, nil)
		res, err := ch.Fetch(context.Background(), r)
		if err != nil || string(res.Body) != tt.want {
			t.Errorf("%s: proxy %q, %v; want %q", tt.url, res.Body, err, tt.want)
		}
	}
}
