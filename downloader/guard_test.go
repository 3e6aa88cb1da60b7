package downloader

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gocrawl/gocrawl/downloader/dnscache"
	"github.com/gocrawl/gocrawl/downloader/netguard"
	"github.com/gocrawl/gocrawl/spider"
)

// TestGuardRefusesInternalAddressesAtDial: the check is on the address
// connected to, after DNS ("localhost" is a name here), with and without
// the DNS cache; nothing reaches the server.
func TestGuardRefusesInternalAddressesAtDial(t *testing.T) {
	var hits atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.Write([]byte("secret")) })
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	guard, _ := netguard.New(nil)
	for _, dns := range []*dnscache.Cache{nil, dnscache.New(10, 0)} {
		d := newTestDownloader(t, Options{Guard: guard, DNS: dns})
		for _, u := range []string{srv.URL, byName} {
			_, err := get(t, d, u+"/")
			var blocked *netguard.BlockedError
			if !errors.As(err, &blocked) || !errors.Is(err, netguard.ErrBlocked) {
				t.Fatalf("%s (dns cache %v): err = %v, want a *netguard.BlockedError", u, dns != nil, err)
			}
			if blocked.Class != "loopback" || blocked.Host == "" {
				t.Errorf("%s: %+v", u, blocked)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the internal server got %d requests", n)
	}
	allowed, _ := netguard.New([]string{"127.0.0.1/32", "::1"})
	d := newTestDownloader(t, Options{Guard: allowed})
	if res, err := get(t, d, byName+"/"); err != nil || string(res.Body) != "secret" {
		t.Fatalf("allowed address: %v", err)
	}
}

// TestGuardAndProxies: the proxy the crawl is told to use may be internal;
// the target of a proxied request is checked before it is sent.
func TestGuardAndProxies(t *testing.T) {
	var seen atomic.Value
	proxy := serve(t, func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.URL.String())
		w.Write([]byte("via proxy"))
	})
	guard, _ := netguard.New(nil)
	d := newTestDownloader(t, Options{Guard: guard})
	req := spider.MustRequest("http://public.invalid/page", nil).Set(MetaProxy, proxy.URL)
	res, err := d.Fetch(context.Background(), req)
	if err != nil || string(res.Body) != "via proxy" {
		t.Fatalf("proxied request to a public name: %v", err)
	}
	for _, target := range []string{"http://169.254.169.254/latest/meta-data/", "http://localhost:8080/", "http://[::1]/"} {
		req := spider.MustRequest(target, nil).Set(MetaProxy, proxy.URL)
		if _, err := d.Fetch(context.Background(), req); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("proxied request to %s: err = %v, want ErrBlocked", target, err)
		}
	}
	if v, _ := seen.Load().(string); strings.Contains(v, "169.254") || strings.Contains(v, "localhost") {
		t.Errorf("the proxy was asked for %s", v)
	}
}
