package redisjob_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/changesite"
	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/redisjob"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
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

// The seeder of a recrawl round is killed (SIGKILL) after it queued part
// of the round's known URLs; the worker that takes seeding over queues
// them all again, and the duplicate filter keeps the ones already queued
// from being queued twice: every page is revisited exactly once in the
// round.
func TestRecrawlSeederKilled(t *testing.T) {
	const pages = 1000
	rs := redistest.Shared(t)
	site := changesite.New(pages, changesite.ETagAndLastModified)
	// While hold is set, the site answers nothing: the killed seeder
	// makes no revisit, so its queued revisits all wait in Redis. A held
	// request ends without reaching the site when its client dies.
	var hold atomic.Bool
	var held atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() {
			held.Add(1)
			defer held.Add(-1)
			select {
			case <-r.Context().Done():
				return
			case <-release:
			}
		}
		site.ServeHTTP(w, r)
	}))
	defer srv.Close()
	job := nextJob()
	sp := followSpider(t, srv.URL+"/")
	crawl(t, config(t, rs.URL(), job, "w0", nil), sp)
	if n := site.Requests.Load(); n != pages+1 {
		t.Fatalf("first crawl: %d requests, want %d", n, pages+1)
	}
	site.Reset()
	hold.Store(true)

	// The seeder: one request at a time, so that it queues the first
	// few hundred known URLs and waits for the queue to go down before
	// queueing more, which the held request never lets happen.
	a := start(t, "seeder", t.TempDir(), "run", "follow", "-a", "start_urls="+srv.URL+"/",
		"-s", "REDIS_URL="+rs.URL(), "-s", "JOB="+job, "-s", "REDIS_WORKER_ID=a", "-s", "RECRAWL_ENABLED=true",
		"-s", "REDIS_LEASE_TTL=1", "-s", "CONCURRENT_REQUESTS=1", "-s", "ROBOTSTXT_OBEY=false",
		"-s", "LOG_LEVEL=INFO", "-s", "LOGSTATS_INTERVAL=0", "-s", "STATS_DUMP=false", "-s", "PROGRESS_DISPLAY=off")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := redisq.Dial(ctx, rs.URL(), redisq.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inspect := func() *redisjob.Report {
		t.Helper()
		r, err := redisjob.Inspect(ctx, c, "gocrawl", job, 0)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Queued: the stored count stops growing once the seeder waits.
	var queued int64
	stable := 0
	if !redistest.Wait(ctx, func() bool {
		n := inspect().Counts.Stored
		if n == queued && n > 0 && held.Load() > 0 {
			stable++
		} else {
			stable = 0
		}
		queued = n
		return stable >= 20
	}) {
		t.Fatalf("the seeder did not queue revisits and wait; its output:\n%s", a.out.String())
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 10*time.Second)
	rep := inspect()
	if rep.Seed == "done" {
		t.Fatalf("the seeder finished seeding before it was killed (%+v): the test needs a larger site", rep.Counts)
	}
	t.Logf("the seeder was killed with %d revisits waiting, %d reserved, seeding %q", rep.Counts.Waiting, rep.Counts.Reserved, rep.Seed)
	if rep.Counts.Waiting < 100 {
		t.Fatalf("only %d revisits were waiting when the seeder was killed, want a few hundred", rep.Counts.Waiting)
	}
	// The held request ends with its client before the site is let go.
	if !redistest.Wait(ctx, func() bool { return held.Load() == 0 }) {
		t.Fatal("the killed seeder's request is still held")
	}
	hold.Store(false)
	close(release)
	// The seeding lease expires: the next worker seeds from its first
	// turn, before it has made any of the revisits waiting (which would
	// hide them from its seeding as already made).
	if !redistest.Wait(ctx, func() bool { return inspect().Seed == "" }) {
		t.Fatal("the killed seeder's seeding lease did not expire")
	}

	// Another worker takes over: it seeds the round again from the start
	// and reclaims the seeder's request once its lease expires.
	res, _ := crawl(t, config(t, rs.URL(), job, "b", map[string]any{"RECRAWL_ENABLED": true, "REDIS_LEASE_TTL": 1}), sp)
	if res.Reason != "finished" {
		t.Fatalf("the worker that took over ended %q", res.Reason)
	}
	hits := site.Hits()
	for i := range pages {
		if n := hits[fmt.Sprintf("/p/%d", i)]; n != 1 {
			t.Errorf("/p/%d revisited %d times in the round, want once", i, n)
		}
	}
	if n, nm := site.Requests.Load(), site.NotModified.Load(); n != pages+1 || nm != pages {
		t.Errorf("the round made %d requests, %d answered 304; want %d and %d", n, nm, pages+1, pages)
	}
}
