package render

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/downloader/netguard"
	"github.com/gocrawl/gocrawl/spider"
)

// TestSSRFGuard: with the guard on, the browser never reaches an internal
// address the crawl did not allow: not through a redirect of the page, not
// through a subresource, not as the page itself. Only 127.0.0.1 is allowed
// here; the "internal" server listens on 127.0.0.2.
func TestSSRFGuard(t *testing.T) {
	var secretHits atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	secret := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		w.Header().Set("Content-Type", "application/javascript")
		fmt.Fprint(w, `document.body.dataset.secret = "loaded"`)
	})}}
	secret.Start()
	defer secret.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, secret.URL+"/latest/meta-data/", http.StatusFound)
		case "/script":
			writePage(w, `<p>public</p><script src="`+secret.URL+`/lib.js"></script>`)
		default:
			writePage(w, `<p>public</p>`)
		}
	}))
	defer srv.Close()
	guard, err := netguard.New([]string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Tabs: 1, Timeout: 10 * time.Second, Guard: guard})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	for _, tc := range []struct {
		name, url string
		blocked   bool // the render is refused (a blocked_address drop)
	}{
		{"allowed page", srv.URL + "/", false},
		{"subresource to an internal address", srv.URL + "/script", false},
		{"redirect to an internal address", srv.URL + "/redirect", true},
		{"internal page", secret.URL + "/", true},
		{"localhost name", "http://localhost:" + port + "/", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.stats.Get("render/blocked_address")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := r.Fetch(ctx, spider.MustRequest(tc.url, nil))
			if got := errors.Is(err, netguard.ErrBlocked); got != tc.blocked {
				t.Fatalf("err = %v, want blocked %v", err, tc.blocked)
			}
			if !tc.blocked {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(res.Body), "public") || strings.Contains(string(res.Body), `data-secret`) {
					t.Errorf("body %q: want the public page without the internal script's effect", res.Body)
				}
			}
			if tc.name != "allowed page" && r.stats.Get("render/blocked_address") <= before {
				t.Error("render/blocked_address did not count the refusal")
			}
		})
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the internal server got %d requests, want 0", n)
	}
}
