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

type authSpider struct {
	testSpider
	auth BasicAuth
}

func (s *authSpider) BasicAuth() BasicAuth { return s.auth }

func authEcho(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		fmt.Fprintf(w, "%v %s:%s", ok, u, p)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPAuth(t *testing.T) {
	srv := authEcho(t)
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	tests := []struct {
		name  string
		auth  BasicAuth
		start string // the crawl's first start request, if any
		url   string
		meta  map[string]any
		want  string
	}{
		{name: "auth domain", auth: BasicAuth{User: "u", Pass: "p", Domain: "127.0.0.1"}, url: srv.URL, want: "true u:p"},
		{name: "other domain", auth: BasicAuth{User: "u", Pass: "p", Domain: "127.0.0.1"}, url: other, want: "false :"},
		{name: "domain of the first start request", auth: BasicAuth{User: "u", Pass: "p"}, start: srv.URL, url: srv.URL, want: "true u:p"},
		{name: "not the first start request's domain", auth: BasicAuth{User: "u", Pass: "p"}, start: other, url: srv.URL, want: "false :"},
		{name: "no start request yet", auth: BasicAuth{User: "u", Pass: "p"}, url: srv.URL, want: "false :"},
		{name: "any domain", auth: BasicAuth{User: "u", Pass: "p", Domain: "*"}, url: other, want: "true u:p"},
		{name: "meta", url: other, meta: map[string]any{MetaHTTPUser: "m", MetaHTTPPass: "q"}, want: "true m:q"},
		{name: "no credentials", url: srv.URL, want: "false :"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, logs := newCrawler(t, &authSpider{auth: tt.auth}, only(nil, "HttpAuth"))
			ch := chainFor(t, c, realFetcher())
			if tt.start != "" {
				ch.ObserveStart(spider.MustRequest(tt.start+"/", nil))
			}
			r := spider.MustRequest(tt.url+"/", nil)
			for k, v := range tt.meta {
				r.Set(k, v)
			}
			res, err := ch.Fetch(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Body) != tt.want {
				t.Errorf("server saw %q, want %q", res.Body, tt.want)
			}
			if strings.Contains(logs.String(), "Basic") {
				t.Errorf("credentials logged: %s", logs)
			}
		})
	}
}

// TestHTTPAuthFirstStartDomainSticks: the domain is the first start
// request's, whatever is fetched first, and later start requests do not
// move it.
func TestHTTPAuthFirstStartDomainSticks(t *testing.T) {
	srv := authEcho(t)
	other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	c, _ := newCrawler(t, &authSpider{auth: BasicAuth{User: "u", Pass: "p"}}, only(nil, "HttpAuth"))
	ch := chainFor(t, c, realFetcher())
	ctx := context.Background()
	ch.ObserveStart(spider.MustRequest(srv.URL+"/", nil))
	ch.ObserveStart(spider.MustRequest(other+"/", nil))
	res, _ := ch.Fetch(ctx, spider.MustRequest(other+"/", nil))
	if string(res.Body) != "false :" {
		t.Errorf("credentials sent to a domain that is not the first start request's: %q", res.Body)
	}
	res, _ = ch.Fetch(ctx, spider.MustRequest(srv.URL+"/", nil))
	if string(res.Body) != "true u:p" {
		t.Errorf("credentials not sent to the first start request's domain: %q", res.Body)
	}
}
