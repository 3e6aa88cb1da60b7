package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/simsite"
	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/observe/metrics"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// gateSpider follows every link; every Parse call waits until release is
// closed, and the first `want` calls are announced on reached.
type gateSpider struct {
	spider.Base
	calls   atomic.Int64
	want    int64
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func (*gateSpider) Name() string { return "gate" }

func (s *gateSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	if s.calls.Add(1) == s.want {
		s.once.Do(func() { close(s.reached) })
	}
	<-s.release
	out.FollowAll(res, res.Find("a[href]"), nil)
	return nil
}

// scrape fetches the endpoint's text exposition as "series value" lines.
func scrape(t *testing.T, addr string) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[line[:i]] = line[i+1:]
	}
	return out
}

// A crawl of three hosts with METRICS_ADDR on and a label limit of 2: the
// endpoint is scraped while the crawl runs (every callback held), then the
// crawl finishes and the stats and STATS_DUMP_FILE hold the metrics.
func TestMonitorServesPrometheusDuringCrawl(t *testing.T) {
	site, err := simsite.Start(t.Context(), simsite.Config{Hosts: []simsite.HostConfig{
		{Name: "a", Pages: simsite.PagesConfig{Count: 20}},
		{Name: "b", Pages: simsite.PagesConfig{Count: 5}},
		{Name: "c", Pages: simsite.PagesConfig{Count: 5}, Limit: simsite.LimitConfig{Rate: 0.001, Burst: 2}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	dump := filepath.Join(t.TempDir(), "stats.json")
	set := settings.New()
	for k, v := range map[string]any{
		"METRICS_ADDR": "127.0.0.1:0", "METRICS_SCOPE_LABEL_LIMIT": 2, "STATS_DUMP_FILE": dump,
		"ROBOTSTXT_OBEY": false, "LOGSTATS_INTERVAL": 0, "BACKOFF_HTTP_CODES": []int{},
		"RETRY_ENABLED": false, "METRICS_SERIES_INTERVAL": 0.01,
	} {
		if _, known := settings.Lookup(k); !known {
			continue // a setting of a component not in this build
		}
		if err := set.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	sp := &gateSpider{want: 3, reached: make(chan struct{}), release: make(chan struct{})}
	for _, h := range []string{"a", "b", "c"} {
		sp.StartURLs = append(sp.StartURLs, site.URL(h)+"/")
	}
	mon, err := metrics.NewMonitor(set, metrics.MonitorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(sp, set, engine.Options{Observers: []engine.Observer{mon.Recorder()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Start(eng); err != nil {
		t.Fatal(err)
	}
	done := make(chan *engine.Result, 1)
	go func() {
		res, err := eng.Run(t.Context())
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()

	<-sp.reached // three start pages downloaded, their callbacks held
	m := scrape(t, mon.MetricsAddr())
	if m["gocrawl_admissions_total"] != "3" {
		t.Errorf("gocrawl_admissions_total = %q, want 3", m["gocrawl_admissions_total"])
	}
	scopes := map[string]bool{}
	var sum int
	for series, v := range m {
		if strings.HasPrefix(series, "gocrawl_responses_total{") {
			i := strings.Index(series, `scope="`)
			scopes[series[i+7:i+7+strings.IndexByte(series[i+7:], '"')]] = true
			sum += int(must(t, v))
		}
	}
	if sum != 3 || len(scopes) != 3 || !scopes["other"] {
		t.Errorf("responses_total: sum %d over scopes %v, want 3 over two hosts and \"other\"", sum, scopes)
	}
	for _, name := range []string{"gocrawl_inflight", "gocrawl_queue_size", "gocrawl_items_total", "go_goroutines"} {
		if _, ok := m[name]; !ok {
			t.Errorf("%s not exported", name)
		}
	}

	close(sp.release)
	res := <-done
	snap, err := mon.Finish(res.Reason)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Global.OK < 25 || snap.Global.HTTP429 == 0 {
		t.Errorf("final snapshot: ok=%d 429=%d, want >= 25 and > 0", snap.Global.OK, snap.Global.HTTP429)
	}
	st := eng.Crawler().Stats
	if got := st.Get("metrics/ok"); got != float64(snap.Global.OK) {
		t.Errorf("stats metrics/ok = %v, want %d", got, snap.Global.OK)
	}
	raw, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	var d metrics.Dump
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Metrics.Scopes) != 3 || d.Stats["metrics/requests"] != float64(snap.Global.Requests) {
		t.Errorf("dump: %d scopes, metrics/requests %v", len(d.Metrics.Scopes), d.Stats["metrics/requests"])
	}
	if _, err := os.Stat(metrics.ScopesCSVPath(dump)); err != nil {
		t.Errorf("per-scope CSV: %v", err)
	}
	// The dump has the time series and each scope's limits, read from the
	// throttler's view.
	perDomain := set.Int("CONCURRENT_REQUESTS_PER_DOMAIN")
	if d.Spider != "gate" || d.Series == nil || len(d.Series.Global.T) == 0 || len(d.Series.Scopes) != 3 {
		t.Fatalf("dump: spider %q, series %+v", d.Spider, d.Series)
	}
	for _, sc := range d.Series.Scopes {
		if len(sc.T) == 0 || sc.ConfiguredConcurrency != perDomain || sc.Concurrency[len(sc.Concurrency)-1] != float64(perDomain) {
			t.Errorf("series of %s: %+v", sc.Scope, sc)
		}
	}
	if len(d.Limits) != 3 {
		t.Errorf("limits: %+v", d.Limits)
	}
	for scope, l := range d.Limits {
		if l.ConfiguredConcurrency != perDomain || l.Concurrency != perDomain {
			t.Errorf("limits of %s: %+v", scope, l)
		}
	}
	if _, err := http.Get("http://" + mon.MetricsAddr() + "/metrics"); err == nil {
		t.Error("metrics endpoint still serving after Finish")
	}
}

func must(t *testing.T, s string) float64 {
	t.Helper()
	var f float64
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		t.Fatalf("value %q: %v", s, err)
	}
	return f
}
