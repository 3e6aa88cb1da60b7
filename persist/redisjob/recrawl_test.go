package redisjob_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/changesite"
	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/redisjob"
)

// Three workers recrawl a finished distributed job together: the known
// URLs are revisited once between them (not once per worker), with their
// validators, and a page changed since is fetched in full.
func TestRecrawlThreeWorkers(t *testing.T) {
	const pages = 60
	rs := redistest.Shared(t)
	site := changesite.New(pages, changesite.ETagAndLastModified)
	srv := httptest.NewServer(site)
	defer srv.Close()
	job := "recrawl3"
	sp := followSpider(t, srv.URL+"/")
	crawl(t, config(t, rs.URL(), job, "w0", nil), sp)
	if n := site.Requests.Load(); n != pages+1 {
		t.Fatalf("first crawl: %d requests, want %d", n, pages+1)
	}

	recrawl := func() {
		t.Helper()
		ctx := context.Background()
		var jobs []*redisjob.Job
		for i := range 3 {
			s := config(t, rs.URL(), job, fmt.Sprintf("w%d", i+1), map[string]any{"RECRAWL_ENABLED": true})
			j, err := redisjob.Open(ctx, s, sp, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}
		var wg sync.WaitGroup
		for i, j := range jobs {
			s := config(t, rs.URL(), job, fmt.Sprintf("w%d", i+1), map[string]any{"RECRAWL_ENABLED": true})
			e, err := engine.New(sp, s, engine.Options{Shared: j})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				defer j.Close()
				if res, err := e.Run(ctx); err != nil || res.Reason != "finished" {
					t.Errorf("worker %d: %v %v", i+1, res, err)
				}
			})
		}
		wg.Wait()
	}

	site.Reset()
	site.Update(7, func(p *changesite.Page) { p.Version++ })
	recrawl()
	hits := site.Hits()
	for i := range pages {
		if n := hits[fmt.Sprintf("/p/%d", i)]; n != 1 {
			t.Errorf("/p/%d revisited %d times by the three workers, want once", i, n)
		}
	}
	if nm := site.NotModified.Load(); nm != pages-1 {
		t.Errorf("%d pages answered 304, want %d (all but the changed one)", nm, pages-1)
	}

	// The round is done: the next recrawl is one more round, again once.
	site.Reset()
	recrawl()
	if n, nm := site.Requests.Load(), site.NotModified.Load(); n != pages+1 || nm != pages {
		t.Errorf("second recrawl: %d requests, %d not modified; want %d and %d", n, nm, pages+1, pages)
	}
}
