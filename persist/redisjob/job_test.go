package redisjob_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/redisjob"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

// config returns crawl settings for a worker of job at url.
func config(t *testing.T, url, job, worker string, kv map[string]any) *settings.Settings {
	t.Helper()
	s := settings.New()
	m := map[string]any{"REDIS_URL": url, "JOB": job, "REDIS_WORKER_ID": worker, "ROBOTSTXT_OBEY": false,
		"LOG_LEVEL": "ERROR", "REDIS_POLL_INTERVAL": 0.05}
	for k, v := range kv {
		m[k] = v
	}
	if err := s.SetMap(m, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	return s
}

func followSpider(t *testing.T, starts ...string) spider.Spider {
	t.Helper()
	sp := follow.New()
	if err := sp.SetArgs(map[string]string{"start_urls": strings.Join(starts, ",")}); err != nil {
		t.Fatal(err)
	}
	return sp
}

// crawl runs one in-process worker of a job to the end.
func crawl(t *testing.T, s *settings.Settings, sp spider.Spider) (*engine.Result, *redisjob.Job) {
	t.Helper()
	ctx := context.Background()
	j, err := redisjob.Open(ctx, s, sp, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(sp, s, engine.Options{Shared: j})
	if err != nil {
		j.Close()
		t.Fatal(err)
	}
	res, err := e.Run(ctx)
	if cerr := j.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return res, j
}

func site(t testing.TB, hosts, pages int) *simsite.Server {
	t.Helper()
	cfg := simsite.Config{}
	for i := range hosts {
		cfg.Hosts = append(cfg.Hosts, simsite.HostConfig{Name: fmt.Sprintf("h%d", i), Seed: int64(i + 1),
			Pages: simsite.PagesConfig{Count: pages, Graph: simsite.GraphRandom, OutDegree: 4}})
	}
	srv, err := simsite.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func starts(srv *simsite.Server) []string {
	var out []string
	for _, h := range srv.Hosts() {
		out = append(out, srv.URL(h)+"/")
	}
	return out
}

// fetchedOnce checks that every page of the site was fetched with 200
// exactly once.
func fetchedOnce(t *testing.T, srv *simsite.Server, pages int) {
	t.Helper()
	got := map[string]int{}
	for _, r := range srv.Records() {
		if r.Status == http.StatusOK {
			got[r.Host+r.Path]++
		}
	}
	for _, h := range srv.Hosts() {
		for i := range pages {
			if n := got[h+simsite.PagePath(i)]; n != 1 {
				t.Errorf("%s%s fetched %d times, want once", h, simsite.PagePath(i), n)
			}
		}
	}
}

func nextJob() string { return fmt.Sprintf("job%d", jobSeq.Add(1)) }

// Two workers in one process share a job: both end when it is finished,
// every page is fetched once, the second one seeds nothing.
func TestWorkersShareAndFinishTogether(t *testing.T) {
	url := redistest.Shared(t).URL()
	srv := site(t, 3, 120)
	job := nextJob()
	var wg sync.WaitGroup
	results := make([]*engine.Result, 2)
	for i := range 2 {
		wg.Go(func() {
			results[i], _ = crawl(t, config(t, url, job, fmt.Sprintf("w%d", i), nil), followSpider(t, starts(srv)...))
		})
	}
	wg.Wait()
	total := 0.0
	for i, r := range results {
		if r.Reason != "finished" {
			t.Errorf("worker %d ended %q, want finished", i, r.Reason)
		}
		total += r.Stats["downloader/response_count"]
	}
	if total != 360 {
		t.Errorf("the workers got %v responses in all, want 360", total)
	}
	fetchedOnce(t, srv, 120)
}

// countHook counts the round trips of a client: one per command, one per
// pipeline, labelled by script.
type countHook struct {
	mu  sync.Mutex
	rts map[string]int
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.rts[redisq.CommandName(cmd)]++
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := map[string]bool{}
		for _, c := range cmds {
			names[redisq.CommandName(c)] = true
		}
		label := []string{}
		for n := range names {
			label = append(label, n)
		}
		sort.Strings(label)
		h.mu.Lock()
		h.rts["pipeline:"+strings.Join(label, "+")]++
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// The budget: at most 2 Redis round trips per crawled request on
// the steady path (a pop, and a share of an apply flush that stores the
// request's children and acknowledges it), counted with a hook on the
// client over a crawl of a site without limits.
func TestRoundTripsPerRequest(t *testing.T) {
	url := redistest.Shared(t).URL()
	srv := site(t, 4, 250)
	h := &countHook{rts: map[string]int{}}
	redisjob.SetTestHooks(h)
	defer redisjob.SetTestHooks()
	res, _ := crawl(t, config(t, url, nextJob(), "w", map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 0}),
		followSpider(t, starts(srv)...))
	pages := res.Stats["downloader/response_count"]
	if pages != 1000 {
		t.Fatalf("%v responses, want 1000", pages)
	}
	steady := h.rts["pop"] + h.rts["apply"] + h.rts["pipeline:apply"]
	total := 0
	var lines []string
	for k, n := range h.rts {
		total += n
		lines = append(lines, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(lines)
	t.Logf("%v pages: %d round trips on the steady path (%.2f per page), %d in all (%.2f per page): %s",
		pages, steady, float64(steady)/pages, total, float64(total)/pages, strings.Join(lines, " "))
	if float64(steady)/pages > 2 {
		t.Errorf("%.2f round trips per crawled request on the steady path, want at most 2", float64(steady)/pages)
	}
}

func TestOpenRefuses(t *testing.T) {
	url := redistest.Shared(t).URL()
	sp := followSpider(t, "http://a.test/")
	ctx := context.Background()
	// A job of another spider.
	other := nextJob()
	j, err := redisjob.Open(ctx, config(t, url, other, "w", nil), &otherSpider{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	for _, tc := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"unreachable", map[string]any{"REDIS_URL": "redis://127.0.0.1:1/0"}, "cannot reach Redis at 127.0.0.1:1"},
		{"jobdir", map[string]any{"JOBDIR": t.TempDir()}, "JOBDIR and REDIS_URL"},
		{"engine-gated", map[string]any{"SCHEDULER": "Scheduler"}, "engine-gated"},
		{"dupefilter", map[string]any{"REDIS_DUPEFILTER": "exact"}, `REDIS_DUPEFILTER "exact"`},
		{"scope manager", map[string]any{"THROTTLING_SCOPE_MANAGER": "Custom"}, "unknown scope manager"},
		{"job name", map[string]any{"JOB": "a b"}, "JOB"},
		{"other spider", map[string]any{"JOB": other}, `belongs to spider "other"`},
		{"per-IP over shards", map[string]any{"REDIS_SHARDS": 4, "CONCURRENT_REQUESTS_PER_IP": 2}, "CONCURRENT_REQUESTS_PER_IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := map[string]any{"JOB": nextJob()}
			for k, v := range tc.set {
				set[k] = v
			}
			_, err := redisjob.Open(ctx, config(t, url, "", "w", set), sp, zerolog.Nop())
			if !errors.Is(err, redisjob.ErrBadJob) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v; want an ErrBadJob naming %q", err, tc.want)
			}
		})
	}
}

type otherSpider struct{ spider.Base }

func (*otherSpider) Name() string { return "other" }
func (*otherSpider) Parse(context.Context, *spider.Response, spider.Output) error {
	return nil
}

func TestInspectAndDelete(t *testing.T) {
	url := redistest.Shared(t).URL()
	srv := site(t, 2, 30)
	job := nextJob()
	crawl(t, config(t, url, job, "w", nil), followSpider(t, starts(srv)...))
	ctx := context.Background()
	c, err := redisq.Dial(ctx, url, redisq.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := redisjob.Inspect(ctx, c, "gocrawl", job, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r.Seed != "done" || r.Seen != 60 || !r.Counts.Empty() || r.Totals["downloader/response_count"] != 60 || r.Meta.Spider != "follow" {
		t.Fatalf("report %+v", r)
	}
	n, err := redisjob.Delete(ctx, c, "gocrawl", job, false)
	if err != nil || n == 0 {
		t.Fatalf("Delete: %d keys, %v", n, err)
	}
	if keys, _ := c.Keys(ctx, "gocrawl:{"+job+"*").Result(); len(keys) != 0 {
		t.Fatalf("keys left after Delete: %v", keys)
	}
	if _, err := redisjob.Inspect(ctx, c, "gocrawl", job, 10); !errors.Is(err, redisjob.ErrNoJob) {
		t.Fatalf("Inspect of a deleted job: %v", err)
	}
	// A job with a live worker is not deleted without force.
	live := nextJob()
	j, err := redisjob.Open(ctx, config(t, url, live, "w", nil), followSpider(t, "http://a.test/"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := redisjob.Delete(ctx, c, "gocrawl", live, false); !errors.Is(err, redisjob.ErrLiveWorkers) {
		t.Fatalf("Delete with a live worker: %v", err)
	}
	if _, err := redisjob.Delete(ctx, c, "gocrawl", live, true); err != nil {
		t.Fatalf("Delete --force: %v", err)
	}
}

// itemSpider yields one item per page.
type itemSpider struct {
	spider.Base
}

func (*itemSpider) Name() string { return "items" }

func (s *itemSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.Item(map[string]any{"path": res.URL.Path})
	return nil
}

func TestRedisItems(t *testing.T) {
	url := redistest.Shared(t).URL()
	srv := site(t, 1, 5)
	ctx := context.Background()
	c, err := redisq.Dial(ctx, url, redisq.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name string
		set  map[string]any
		read func(job string) ([]string, error)
	}{
		{"list", map[string]any{}, func(job string) ([]string, error) {
			return c.LRange(ctx, "gocrawl:{"+job+"}:items", 0, -1).Result()
		}},
		{"stream", map[string]any{"REDIS_ITEMS_STREAM": "items-stream"}, func(job string) ([]string, error) {
			msgs, err := c.XRange(ctx, "items-stream", "-", "+").Result()
			var out []string
			for _, m := range msgs {
				out = append(out, m.Values["item"].(string))
			}
			return out, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := nextJob()
			set := map[string]any{"ITEM_PIPELINES": map[string]any{redisjob.ItemsPipelineName: 900}}
			for k, v := range tc.set {
				set[k] = v
			}
			sp := &itemSpider{Base: spider.Base{StartURLs: []string{srv.URL("h0") + "/", srv.URL("h0") + "/page/1"}}}
			crawl(t, config(t, url, job, "w", set), sp)
			items, err := tc.read(job)
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(items)
			if want := []string{`{"path":"/"}`, `{"path":"/page/1"}`}; strings.Join(items, " ") != strings.Join(want, " ") {
				t.Fatalf("items %q, want %q", items, want)
			}
		})
	}
}

// A job whose dupefilter is a Bloom filter crawls every page once (at a
// 0.1% false-positive rate and 200 URLs in a filter sized for 10,000, a
// false positive is very unlikely: 1e-9 per URL).
func TestBloomDupefilter(t *testing.T) {
	url := redistest.Shared(t).URL()
	srv := site(t, 2, 100)
	job := nextJob()
	res, _ := crawl(t, config(t, url, job, "w", map[string]any{"REDIS_DUPEFILTER": "bloom", "REDIS_BLOOM_CAPACITY": 10000}),
		followSpider(t, starts(srv)...))
	if res.Reason != "finished" || res.Stats["dupefilter/filtered"] == 0 {
		t.Fatalf("ended %q with %v duplicates filtered", res.Reason, res.Stats["dupefilter/filtered"])
	}
	fetchedOnce(t, srv, 100)
	ctx := context.Background()
	c, err := redisq.Dial(ctx, url, redisq.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := redisjob.Inspect(ctx, c, "gocrawl", job, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta.Dupefilter != "bloom" || r.Meta.BloomHashes != 10 || r.Seen != 200 {
		t.Fatalf("inspect: dupefilter %s with %d hashes, %d fingerprints; want bloom, 10, 200", r.Meta.Dupefilter, r.Meta.BloomHashes, r.Seen)
	}
}

// A worker aborted mid-crawl (a second Ctrl-C) puts the requests it held
// back in line at once, with their scope slots, instead of leaving them
// leased until their leases expire.
func TestAbortPutsRequestsBack(t *testing.T) {
	url := redistest.Shared(t).URL()
	cfg := simsite.Config{Hosts: []simsite.HostConfig{{Name: "slow", Pages: simsite.PagesConfig{Count: 200},
		Latency: simsite.LatencyConfig{Kind: simsite.LatencyFixed, Fixed: 300 * time.Millisecond}}}}
	srv, err := simsite.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	job := nextJob()
	s := config(t, url, job, "w", map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 8})
	sp := followSpider(t, srv.URL("slow")+"/")
	ctx := context.Background()
	j, err := redisjob.Open(ctx, s, sp, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(sp, s, engine.Options{Shared: j})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for len(srv.Records()) < 12 {
			time.Sleep(10 * time.Millisecond)
		}
		e.Abort()
	}()
	res, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if res.Reason != "aborted" {
		t.Fatalf("ended %q, want aborted", res.Reason)
	}
	c, err := redisq.Dial(ctx, url, redisq.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := redisjob.Inspect(ctx, c, "gocrawl", job, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Counts.Reserved != 0 || r.Counts.Waiting == 0 {
		t.Fatalf("after the abort: %+v; want nothing reserved, the rest waiting", r.Counts)
	}
	for _, sc := range r.Scopes {
		if sc.Active != 0 {
			t.Fatalf("scope %s still has %d slots taken after the abort", sc.Scope, sc.Active)
		}
	}
}

// robots.txt's Crawl-delay, read by whichever worker gets there first, holds
// for both workers of a job: one request at a time, the delay between them.
func TestRobotsCrawlDelayShared(t *testing.T) {
	url := redistest.Shared(t).URL()
	cfg := simsite.Config{Hosts: []simsite.HostConfig{{Name: "polite", Pages: simsite.PagesConfig{Count: 16},
		Robots: simsite.RobotsConfig{CrawlDelay: 300 * time.Millisecond, Disallow: []string{"/page/7"}}}}}
	srv, err := simsite.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	job := nextJob()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			s := config(t, url, job, fmt.Sprintf("w%d", i), map[string]any{"ROBOTSTXT_OBEY": true, "RANDOMIZE_DOWNLOAD_DELAY": false})
			crawl(t, s, followSpider(t, srv.URL("polite")+"/"))
		})
	}
	wg.Wait()
	recs := srv.Records().Host("polite")
	var pages simsite.Records
	for _, r := range recs {
		if r.Path != "/robots.txt" {
			pages = append(pages, r)
		}
		if r.Path == "/page/7" {
			t.Error("a page robots.txt disallows was fetched")
		}
	}
	if len(pages) != 15 {
		t.Errorf("%d pages fetched, want 15 (16 but the disallowed one)", len(pages))
	}
	if st := pages.Stats(); st.PeakConcurrent > 1 {
		t.Errorf("%d requests in flight at once; Crawl-delay means one at a time", st.PeakConcurrent)
	}
	if med := gapQuantile(pages, 0.5); med < 290*time.Millisecond {
		t.Errorf("median gap %v, Crawl-delay 300 ms", med)
	}
}
