package jobdir_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/devtools/changesite"
	"github.com/gocrawl/gocrawl/devtools/syncbuf"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// changeSpider follows every link and records each response's Change.
type changeSpider struct {
	spider.Base
	mu      sync.Mutex
	changes map[string]string // path -> Change of its last callback
	calls   map[string]int
}

func newChangeSpider(start string) *changeSpider {
	return &changeSpider{Base: spider.Base{StartURLs: []string{start}}, changes: map[string]string{}, calls: map[string]int{}}
}

func (*changeSpider) Name() string { return "change" }

func (s *changeSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.mu.Lock()
	s.changes[res.URL.Path] = res.Change
	s.calls[res.URL.Path]++
	s.mu.Unlock()
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	out.FollowAll(res, doc.Find("a[href]"), s.Parse)
	return nil
}

func (s *changeSpider) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes, s.calls = map[string]string{}, map[string]int{}
}

func recrawlSettings(t *testing.T, kv ...any) *settings.Settings {
	t.Helper()
	s := settings.New()
	kv = append([]any{"ROBOTSTXT_OBEY", false, "RETRY_ENABLED", false, "LOGSTATS_INTERVAL", 0, "DOWNLOAD_DELAY", 0.0, "AUTOTHROTTLE_ENABLED", false}, kv...)
	for i := 0; i < len(kv); i += 2 {
		name := kv[i].(string)
		if _, ok := settings.Lookup(name); !ok {
			continue
		}
		if err := s.Set(name, kv[i+1], settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// crawlJob runs sp once on the job in dir and returns the stats and log.
func crawlJob(t *testing.T, dir string, sp spider.Spider, kv ...any) (map[string]float64, string) {
	t.Helper()
	log := &syncbuf.Buffer{}
	lg := zerolog.New(log).Level(zerolog.InfoLevel)
	j, err := jobdir.Open(dir, sp.Name(), jobdir.Options{Log: lg})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	e, err := engine.New(sp, recrawlSettings(t, kv...), engine.Options{Job: j, Log: lg})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "finished" {
		t.Fatalf("crawl ended with %s", res.Reason)
	}
	return res.Stats, log.String()
}

// The site: / links to pages 0-5, each with its own way of validating.
//
//	0 ETag + Last-Modified, unchanged  -> 304
//	1 Last-Modified only, unchanged    -> 304
//	2 no validators, unchanged         -> 200, same fingerprint
//	3 no validators, changed, links 6  -> changed; 6 is new
//	4 ETag + Last-Modified, changed    -> 200, changed
//	5 gone in the recrawl              -> 404
func changeSite() *changesite.Site {
	site := changesite.New(0, 0)
	site.Set(0, changesite.Page{Validators: changesite.ETagAndLastModified})
	site.Set(1, changesite.Page{Validators: changesite.LastModifiedOnly})
	site.Set(2, changesite.Page{Validators: changesite.NoValidators})
	site.Set(3, changesite.Page{Validators: changesite.NoValidators})
	site.Set(4, changesite.Page{Validators: changesite.ETagAndLastModified})
	site.Set(5, changesite.Page{Validators: changesite.ETagAndLastModified})
	return site
}

func TestRecrawlRevisitsWithValidators(t *testing.T) {
	site := changeSite()
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "job")
	sp := newChangeSpider(srv.URL + "/")

	st, _ := crawlJob(t, dir, sp)
	if got := st["recrawl/new"]; got != 7 {
		t.Fatalf("first crawl: recrawl/new = %v, want 7 (/ and 6 pages)", got)
	}
	if site.Conditional.Load() != 0 {
		t.Fatalf("first crawl sent %d conditional requests, want 0", site.Conditional.Load())
	}

	// Without RECRAWL_ENABLED a finished job stays finished.
	site.Reset()
	crawlJob(t, dir, sp)
	if n := site.Requests.Load(); n != 0 {
		t.Fatalf("a second run without RECRAWL_ENABLED sent %d requests, want 0", n)
	}

	site.Update(3, func(p *changesite.Page) { p.Version++; p.Links = []int{6} })
	site.Set(6, changesite.Page{Validators: changesite.ETagAndLastModified})
	site.Update(4, func(p *changesite.Page) { p.Version++ })
	site.Update(5, func(p *changesite.Page) { p.Gone = true })
	sp.reset()
	site.Reset()
	before := st
	st, log := crawlJob(t, dir, sp, "RECRAWL_ENABLED", true)
	st = delta(st, before) // a job's stats go on from run to run
	want := map[string]float64{
		"recrawl/not_modified": 2, // pages 0 and 1
		"recrawl/unchanged":    3, // and page 2, by its fingerprint; / changed (6 is linked)
		"recrawl/changed":      3, // /, 3 and 4
		"recrawl/new":          1, // 6
		"recrawl/gone":         1, // 5
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("recrawl: %s = %v, want %v", k, st[k], v)
		}
	}
	// Pages 0, 1, 4, 5 had validators; / and 2, 3 had none.
	if got := site.Conditional.Load(); got != 4 {
		t.Errorf("recrawl sent %d conditional requests, want 4", got)
	}
	if got := site.Requests.Load(); got != 8 {
		t.Errorf("recrawl sent %d requests, want 8 (7 known URLs and the new one)", got)
	}
	for _, p := range []string{"/p/0", "/p/1"} {
		if sp.calls[p] != 0 {
			t.Errorf("the callback saw the 304 of %s", p)
		}
	}
	for p, c := range map[string]string{"/p/2": "unchanged", "/p/3": "changed", "/p/4": "changed", "/p/6": "new"} {
		if sp.changes[p] != c {
			t.Errorf("%s: Response.Change = %q, want %q", p, sp.changes[p], c)
		}
	}
	if !strings.Contains(log, "page gone") {
		t.Errorf("the gone page was not reported:\n%s", log)
	}

	// A second recrawl of the unchanged site: every page with validators
	// answers 304.
	site.Reset()
	before = st
	after, _ := crawlJob(t, dir, sp, "RECRAWL_ENABLED", true)
	st = delta(after, before)
	if after["recrawl/round"] != 2 || st["recrawl/not_modified"] != 4 || st["recrawl/changed"] != 0 {
		t.Errorf("second recrawl: round %v, not modified %v (want 4: pages 0, 1, 4, 6), changed %v (want 0)",
			after["recrawl/round"], st["recrawl/not_modified"], st["recrawl/changed"])
	}
}

// delta returns the counters of after less those of before.
func delta(after, before map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		d[k] = v - before[k]
	}
	return d
}

// notModifiedSpider wants the 304s.
type notModifiedSpider struct {
	*changeSpider
	mu   sync.Mutex
	seen []string
}

func (s *notModifiedSpider) NotModified(ctx context.Context, res *spider.Response, out spider.Output) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res.Status != http.StatusNotModified || len(res.Body) != 0 {
		panic("NotModified got a response that is not a 304")
	}
	s.seen = append(s.seen, res.URL.Path)
	return nil
}

func TestRecrawlNotModifiedHook(t *testing.T) {
	site := changesite.New(3, changesite.ETagAndLastModified)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "job")
	sp := &notModifiedSpider{changeSpider: newChangeSpider(srv.URL + "/")}
	crawlJob(t, dir, sp)
	crawlJob(t, dir, sp, "RECRAWL_ENABLED", true)
	if len(sp.seen) != 3 {
		t.Fatalf("NotModified saw %v, want the 3 pages", sp.seen)
	}
}

func TestRecrawlChurningETags(t *testing.T) {
	site := changesite.New(8, changesite.ChurningETag)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "job")
	sp := newChangeSpider(srv.URL + "/")
	before, _ := crawlJob(t, dir, sp, "CONCURRENT_REQUESTS", 1)
	site.Reset()
	st, log := crawlJob(t, dir, sp, "RECRAWL_ENABLED", true, "CONCURRENT_REQUESTS", 1)
	st = delta(st, before)
	if st["recrawl/unchanged"] != 9 || st["recrawl/changed"] != 0 {
		t.Errorf("unchanged %v (want 9), changed %v (want 0): the fingerprint decides", st["recrawl/unchanged"], st["recrawl/changed"])
	}
	if n := strings.Count(log, "sends a new ETag on every response"); n != 1 {
		t.Errorf("the churning ETags were logged %d times, want once:\n%s", n, log)
	}
	// One request at a time: the first three revisits send If-None-Match,
	// then none does.
	if got := site.IfNoneMatch.Load(); got != 3 {
		t.Errorf("%d requests sent If-None-Match, want 3", got)
	}
}

func TestRecrawlTextFingerprint(t *testing.T) {
	site := changesite.New(4, changesite.NoValidators)
	site.Nonce = true
	srv := httptest.NewServer(site)
	defer srv.Close()
	for _, tc := range []struct {
		mode    string
		changed float64
	}{{"body", 4}, {"text", 0}} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "job")
			sp := newChangeSpider(srv.URL + "/")
			before, _ := crawlJob(t, dir, sp, "RECRAWL_FINGERPRINT", tc.mode)
			st, _ := crawlJob(t, dir, sp, "RECRAWL_ENABLED", true, "RECRAWL_FINGERPRINT", tc.mode)
			st = delta(st, before)
			if st["recrawl/changed"] != tc.changed {
				t.Errorf("RECRAWL_FINGERPRINT=%s: %v pages changed, want %v (only a script's nonce differs)", tc.mode, st["recrawl/changed"], tc.changed)
			}
		})
	}
}

// A job written before recrawl records existed has none: a recrawl says
// so and fetches every page the spider reaches once more, without
// validators; the next recrawl has them.
func TestRecrawlLegacyJob(t *testing.T) {
	site := changesite.New(5, changesite.ETagAndLastModified)
	srv := httptest.NewServer(site)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "job")
	sp := newChangeSpider(srv.URL + "/")
	crawlJob(t, dir, sp)
	// Remove what this version adds, as a job of the previous version.
	j, err := jobdir.Open(dir, sp.Name(), jobdir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lo := []byte(jobdir.PrefixRecrawl)
	hi := append(append([]byte(nil), lo[:len(lo)-1]...), lo[len(lo)-1]+1)
	if err := j.DB().DeleteRange(lo, hi, nil); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	site.Reset()
	_, log := crawlJob(t, dir, sp, "RECRAWL_ENABLED", true)
	if !strings.Contains(log, "written before gocrawl kept recrawl records") {
		t.Errorf("no message about the old job:\n%s", log)
	}
	if n, c := site.Requests.Load(), site.Conditional.Load(); n != 6 || c != 0 {
		t.Errorf("legacy recrawl: %d requests (%d conditional), want 6 unconditional", n, c)
	}
	site.Reset()
	crawlJob(t, dir, sp, "RECRAWL_ENABLED", true)
	if n := site.NotModified.Load(); n != 5 {
		t.Errorf("the recrawl after the legacy one got %d 304s, want 5", n)
	}
}

func TestRecrawlNeedsAJob(t *testing.T) {
	_, err := engine.New(newChangeSpider("http://127.0.0.1:1/"), recrawlSettings(t, "RECRAWL_ENABLED", true), engine.Options{})
	if err == nil || !strings.Contains(err.Error(), "RECRAWL_ENABLED") || !strings.Contains(err.Error(), "JOBDIR") {
		t.Fatalf("RECRAWL_ENABLED without a job: %v, want an error naming the setting and JOBDIR", err)
	}
}
