package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/changesite"
	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/recrawl"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/spider"
)

// recordingSpider follows links and counts its callbacks per path.
type recordingSpider struct {
	spider.Base
	mu      sync.Mutex
	visits  map[string][]time.Time
	changes map[string][]string
	onVisit func()
}

func (*recordingSpider) Name() string { return "rec" }

func (s *recordingSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.mu.Lock()
	s.visits[res.URL.Path] = append(s.visits[res.URL.Path], time.Now())
	s.changes[res.URL.Path] = append(s.changes[res.URL.Path], res.Change)
	s.mu.Unlock()
	if s.onVisit != nil {
		s.onVisit()
	}
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	out.FollowAll(res, doc.Find("a[href]"), s.Parse)
	return nil
}

// In continuous mode the crawl does not end: every visited URL comes back
// at its due time, with its validators, until the crawl is stopped.
func TestContinuousRevisits(t *testing.T) {
	const pages, interval = 3, 30 * time.Millisecond
	site := changesite.New(pages, changesite.NoValidators) // every visit reaches the callback
	var amu sync.Mutex
	arrivals := map[string][]time.Time{} // when the server got each request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		amu.Lock()
		arrivals[r.URL.Path] = append(arrivals[r.URL.Path], time.Now())
		amu.Unlock()
		site.ServeHTTP(w, r)
	}))
	defer srv.Close()
	sp := &recordingSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/"}}, visits: map[string][]time.Time{}, changes: map[string][]string{}}
	e, err := New(sp, testSettings(t, "DOWNLOAD_DELAY", 0.0), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.rc != nil {
		t.Fatal("a crawl without a job nor a recrawl policy keeps records")
	}
	if e.rc, err = newRecrawlerWith(context.Background(), e, recrawl.Fixed(interval)); err != nil {
		t.Fatal(err)
	}
	sp.onVisit = func() {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		for i := range pages {
			if len(sp.visits[fmt.Sprintf("/p/%d", i)]) < 3 {
				return
			}
		}
		e.Stop("enough")
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "enough" {
		t.Fatalf("continuous crawl ended with %q, want the stop's reason", res.Reason)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for i := range pages {
		p := fmt.Sprintf("/p/%d", i)
		amu.Lock()
		v := arrivals[p]
		amu.Unlock()
		for k := 1; k < len(v); k++ {
			// The revisit is held in the frontier until it is due: a
			// full interval after the previous answer arrived.
			if gap := v[k].Sub(v[k-1]); gap < interval {
				t.Errorf("%s revisited %v after the previous visit, before its interval %v", p, gap, interval)
			}
		}
		if c := sp.changes[p]; c[0] != "new" || c[1] != "unchanged" {
			t.Errorf("%s: changes %v, want new then unchanged", p, c)
		}
	}
	if res.Stats["recrawl/revisits"] < 2*pages {
		t.Errorf("recrawl/revisits = %v, want at least %d", res.Stats["recrawl/revisits"], 2*pages)
	}
}

// RECRAWL_BUDGET holds revisits back: with one revisit a minute, a
// continuous crawl whose pages are due every 30 ms revisits one page and
// puts the others back in the queue until the budget allows them.
func TestContinuousBudget(t *testing.T) {
	const pages, interval = 3, 30 * time.Millisecond
	site := changesite.New(pages, changesite.NoValidators)
	srv := httptest.NewServer(site)
	defer srv.Close()
	sp := &recordingSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/"}}, visits: map[string][]time.Time{}, changes: map[string][]string{}}
	e, err := New(sp, testSettings(t, "DOWNLOAD_DELAY", 0.0, "RECRAWL_BUDGET", "total=1/m"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.rc, err = newRecrawlerWith(context.Background(), e, recrawl.Fixed(interval)); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		deadline := time.After(30 * time.Second)
		for e.stats.Get("recrawl/budget_delayed") < pages {
			select {
			case <-deadline:
				e.Stop("timeout")
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		e.Stop("enough")
	}()
	res, err := e.Run(context.Background())
	<-stopped
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "enough" {
		t.Fatalf("crawl ended with %q: revisits were never held back by the budget (recrawl/budget_delayed = %v)", res.Reason, res.Stats["recrawl/budget_delayed"])
	}
	if n := res.Stats["recrawl/revisits"]; n > 1 {
		t.Errorf("recrawl/revisits = %v under a budget of one a minute", n)
	}
}

// A revisit of a recrawl round that RECRAWL_BUDGET holds back comes back
// past the duplicate filter (its round fingerprint is its own), with its
// round salt; the record key of a round revisit is the URL's own.
func TestRoundRevisitHeldByBudget(t *testing.T) {
	sp := &recordingSpider{Base: spider.Base{StartURLs: []string{"http://127.0.0.1:1/"}}}
	e, err := New(sp, testSettings(t, "RECRAWL_BUDGET", "total=1/h"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRecrawlerWith(context.Background(), e, recrawl.Fixed(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	req := spider.MustRequest("http://127.0.0.1:1/p/1", nil)
	plain := key(req)
	markRoundRevisit(req, 2)
	if req.DontFilter || key(req) != plain {
		t.Fatalf("a round revisit: DontFilter %v, key %s; want filtered by its round fingerprint, key %s", req.DontFilter, key(req), plain)
	}
	r.budget.Take(req.Host(), e.clock.Now()) // the hour's only revisit
	_, err = r.fetch(context.Background(), req, nil)
	var resched *middleware.RescheduleError
	if !errors.As(err, &resched) || len(resched.Requests) != 1 {
		t.Fatalf("fetch over budget: %v, want a reschedule", err)
	}
	later := resched.Requests[0]
	if !later.DontFilter || later.Get(dupefilter.MetaSalt) != roundSalt(2) || !isRevisit(later) {
		t.Errorf("the held-back revisit: DontFilter %v, salt %v, revisit %v; want past the filter, round 2's salt, a revisit",
			later.DontFilter, later.Get(dupefilter.MetaSalt), isRevisit(later))
	}
	if s := stripRevisit(later); s.Get(dupefilter.MetaSalt) != nil || s.DontFilter {
		t.Errorf("the request a record keeps has salt %v, DontFilter %v", s.Get(dupefilter.MetaSalt), s.DontFilter)
	}
}

// countingStore counts the record reads of a store.
type countingStore struct {
	recrawl.Store
	gets int
}

func (s *countingStore) Get(ctx context.Context, key string) (recrawl.Record, bool, error) {
	s.gets++
	return s.Store.Get(ctx, key)
}

// A visit reads the URL's record only when there is an earlier round to
// compare with or a schedule to follow: the first crawl of a job writes
// without reading (a round trip less per page in a distributed crawl).
func TestVisitReadsRecordOnlyWhenItCan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		round     recrawl.Round
		policy    recrawl.Policy
		wantReads int
	}{
		{"first crawl", recrawl.Round{N: 0}, nil, 0},
		{"a recrawl round", recrawl.Round{N: 1}, nil, 1},
		{"a legacy round", recrawl.Round{N: 1, Legacy: true}, nil, 1},
		{"continuous mode", recrawl.Round{N: 0}, recrawl.Fixed(time.Hour), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := &recordingSpider{Base: spider.Base{StartURLs: []string{"http://127.0.0.1:1/"}}}
			e, err := New(sp, testSettings(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := newRecrawlerWith(context.Background(), e, recrawl.Fixed(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			store := &countingStore{Store: r.store}
			r.store, r.round, r.policy = store, tc.round, tc.policy
			req := spider.MustRequest("http://127.0.0.1:1/p/1", nil)
			res := &spider.Response{URL: req.URL, Status: http.StatusOK, Header: http.Header{"Etag": {`"a"`}}, Body: []byte("<p>one</p>"), Request: req}
			r.visited(context.Background(), req, res)
			if store.gets != tc.wantReads {
				t.Errorf("record reads: %d, want %d", store.gets, tc.wantReads)
			}
			rec, found, err := store.Store.Get(context.Background(), key(req))
			if err != nil || !found || rec.ETag != `"a"` {
				t.Errorf("the visit's record: %+v, found %v, err %v; want written with its ETag", rec, found, err)
			}
		})
	}
}
