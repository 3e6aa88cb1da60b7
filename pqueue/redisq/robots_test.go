package redisq_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// The job's robots.txt answers: the first worker to ask claims the
// fetch, the others wait until it stores the answer, then read it; a
// claim given up (a failed fetch) passes to the next worker that asks.
func TestSharedRobotsClaimStoreRead(t *testing.T) {
	c, l := dial(t), layout(t, 2)
	a := redisq.NewThrottling(newStore(t, c, l, "a"))
	b := redisq.NewThrottling(newStore(t, c, l, "b"))
	ctx := context.Background()
	type reply struct {
		status         int
		body           string
		found, claimed bool
	}
	ask := func(s *redisq.Throttling, origin string) reply {
		t.Helper()
		st, body, found, claimed, err := s.RobotsTxt(ctx, origin)
		if err != nil {
			t.Fatal(err)
		}
		return reply{st, string(body), found, claimed}
	}
	steps := []struct {
		name string
		do   func() reply
		want reply
	}{
		{"a asks first: claims", func() reply { return ask(a, "http://h.test") }, reply{claimed: true}},
		{"a asks again: still its claim", func() reply { return ask(a, "http://h.test") }, reply{claimed: true}},
		{"b asks while a fetches: waits", func() reply { return ask(b, "http://h.test") }, reply{}},
		{"a stores, b reads", func() reply {
			if err := a.StoreRobotsTxt(ctx, "http://h.test", 200, []byte("User-agent: *\nDisallow: /x\n"), time.Hour); err != nil {
				t.Fatal(err)
			}
			return ask(b, "http://h.test")
		}, reply{status: 200, body: "User-agent: *\nDisallow: /x\n", found: true}},
		{"another origin: b claims", func() reply { return ask(b, "http://g.test") }, reply{claimed: true}},
		{"b gives it up: a claims", func() reply {
			b.ReleaseRobotsTxt(ctx, "http://g.test")
			return ask(a, "http://g.test")
		}, reply{claimed: true}},
		{"a stores a 404: b reads it", func() reply {
			if err := a.StoreRobotsTxt(ctx, "http://g.test", 404, nil, time.Hour); err != nil {
				t.Fatal(err)
			}
			return ask(b, "http://g.test")
		}, reply{status: 404, found: true}},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
}

// sharedThrottler is what middleware.RobotsTxt finds in a distributed
// crawl's throttler: the job's robots.txt answers.
type sharedThrottler struct{ s throttling.SharedRobots }

func (x sharedThrottler) SharedRobots() throttling.SharedRobots { return x.s }

func (sharedThrottler) DelayScope(string, time.Duration) {}

// Three workers of one job that need the same origin's robots.txt at once
// fetch it once (one worker; the others read its answer), and each obeys it.
func TestRobotsTxtFetchedOncePerJob(t *testing.T) {
	var fetches atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fetches.Add(1)
			<-release // the others ask while it is being fetched
			io.WriteString(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		io.WriteString(w, "page")
	}))
	defer srv.Close()
	download := func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		hr, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL.String(), nil)
		if err != nil {
			return nil, err
		}
		res, err := http.DefaultClient.Do(hr)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		return &spider.Response{URL: req.URL, Status: res.StatusCode, Header: res.Header, Body: body, Request: req}, err
	}
	c, l := dial(t), layout(t, 1)
	var ms []*middleware.RobotsTxt
	for _, owner := range []string{"w1", "w2", "w3"} {
		thr := sharedThrottler{redisq.NewThrottling(newStore(t, c, l, owner))}
		m, err := middleware.NewRobotsTxt(&spider.Crawler{Settings: settings.New(), Throttler: thr, Download: download})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ms))
	for i, m := range ms {
		wg.Go(func() { errs[i] = m.Check(context.Background(), spider.MustRequest(srv.URL+"/private/1", nil)) })
	}
	for fetches.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the others ask meanwhile (and wait)
	close(release)
	wg.Wait()
	for i, err := range errs {
		var drop *middleware.DropError
		if !errors.As(err, &drop) || !errors.Is(err, middleware.ErrRobotsTxtDisallowed) {
			t.Errorf("worker %d: /private/1 gave %v, want a drop (disallowed)", i+1, err)
		}
	}
	for i, m := range ms {
		if err := m.Check(context.Background(), spider.MustRequest(srv.URL+"/public", nil)); err != nil {
			t.Errorf("worker %d: /public gave %v, want allowed", i+1, err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("robots.txt fetched %d times by 3 workers of one job, want 1", n)
	}
}
