package downloader

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/testproxy"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

func TestProxyFailuresHaveTheirKind(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Proxy") == "" {
			t.Errorf("request %s reached the target without the proxy", r.URL)
		}
	}))
	defer target.Close()
	tlsTarget := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsTarget.Close()
	good, _ := testproxy.Start(&testproxy.Proxy{Name: "good", User: "u", Pass: "pw"})
	defer good.Close()
	refusing, _ := testproxy.Start(&testproxy.Proxy{Name: "refusing", BanStatus: http.StatusForbidden})
	defer refusing.Close()
	d := New(Options{TLSConfig: tlsTarget.Client().Transport.(*http.Transport).TLSClientConfig})
	for _, tc := range []struct {
		name, url, proxy string
		kind             error // nil: no error
		status           int
	}{
		{"http through a good proxy", target.URL, good.URL(), nil, 200},
		{"https tunnel through a good proxy", tlsTarget.URL, good.URL(), nil, 200},
		{"dead proxy", target.URL, "http://" + testproxy.Dead(), errkind.ProxyFailed, 0},
		{"dead proxy, https", tlsTarget.URL, "http://" + testproxy.Dead(), errkind.ProxyFailed, 0},
		{"CONNECT refused", tlsTarget.URL, refusing.URL(), errkind.ProxyFailed, 0},
		// TLS to a proxy that answers in plain HTTP: the transport's
		// "proxyconnect" error, not a scheme mismatch of the target.
		{"https proxy speaking http", target.URL, "https://" + strings.TrimPrefix(good.URL(), "http://"), errkind.ProxyFailed, 0},
		{"http refused is a response", target.URL, refusing.URL(), nil, 403},
		{"no proxy, dead target", "http://" + testproxy.Dead(), "", errkind.DownloadFailed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := spider.MustRequest(tc.url, nil)
			if tc.proxy != "" {
				req.Set(MetaProxy, tc.proxy)
			}
			res, err := d.Fetch(context.Background(), req)
			switch {
			case tc.kind == nil && err != nil:
				t.Fatalf("err = %v", err)
			case tc.kind != nil && !errors.Is(err, tc.kind):
				t.Fatalf("err = %v, want kind %v", err, tc.kind)
			case tc.kind == nil && res.Status != tc.status:
				t.Fatalf("status %d, want %d", res.Status, tc.status)
			}
		})
	}
	if n := len(good.Log()); n != 2 {
		t.Errorf("the good proxy logged %d requests, want 2", n)
	}
}
