package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/spider"
)

type basicAuthSpider struct {
	spider.Base
}

func (*basicAuthSpider) Name() string { return "auth" }

func (*basicAuthSpider) BasicAuth() middleware.BasicAuth {
	return middleware.BasicAuth{User: "user", Pass: "secret"}
}

func (*basicAuthSpider) Parse(context.Context, *spider.Response, spider.Output) error { return nil }

// authRecorder records, per path, whether requests carried credentials.
// Its robots.txt answers after delay, so that the other host's request
// reaches the HttpAuth middleware first.
type authRecorder struct {
	mu    sync.Mutex
	creds map[string]bool
}

func (a *authRecorder) server(t *testing.T, robotsDelay time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			time.Sleep(robotsDelay)
			http.NotFound(w, r)
			return
		}
		_, _, ok := r.BasicAuth()
		a.mu.Lock()
		a.creds[r.Host+r.URL.Path] = ok
		a.mu.Unlock()
		w.Write([]byte("<html></html>"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPAuthEmptyDomainBindsToFirstStartURL: with start URLs A, B and
// a BasicAuth without a domain, A (the first start URL) gets the
// credentials and B never does, even when B's request reaches the
// middleware first (A's robots.txt is slow). Five runs, as in the report.
func TestHTTPAuthEmptyDomainBindsToFirstStartURL(t *testing.T) {
	for run := range 5 {
		rec := &authRecorder{creds: map[string]bool{}}
		a := rec.server(t, 300*time.Millisecond)
		b := rec.server(t, 0)
		// Two hosts: A is 127.0.0.1, B is localhost.
		bURL := strings.Replace(b.URL, "127.0.0.1", "localhost", 1)
		sp := &basicAuthSpider{Base: spider.Base{StartURLs: []string{a.URL + "/a", bURL + "/b"}}}
		e, err := New(sp, testSettings(t, "ROBOTSTXT_OBEY", true), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		aHost, bHost := a.Listener.Addr().String(), strings.Replace(b.Listener.Addr().String(), "127.0.0.1", "localhost", 1)
		rec.mu.Lock()
		gotA, seenA := rec.creds[aHost+"/a"]
		gotB, seenB := rec.creds[bHost+"/b"]
		rec.mu.Unlock()
		if !seenA || !seenB {
			t.Fatalf("run %d: pages fetched: %v", run, rec.creds)
		}
		if !gotA || gotB {
			t.Fatalf("run %d: credentials to A (first start URL): %v, to B: %v; want A only", run, gotA, gotB)
		}
	}
}
