package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/observe/metrics"
	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/throttling"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// sampleDump is a crawl of two scopes over 30 s: a strict one that gets
// 429s at 10 s, backs off (delay 1 s -> 2 s, concurrency 4 -> 1) and
// recovers, and a fast one.
func sampleDump(strict string) metrics.Dump {
	var s metrics.Series
	s.Start, s.Step = t0, 1
	strictS := metrics.ScopeSeries{Scope: strict, ConfiguredDelay: 1, ConfiguredConcurrency: 4}
	fast := metrics.ScopeSeries{Scope: "fast.example", ConfiguredDelay: 0, ConfiguredConcurrency: 8}
	for i := 1; i <= 30; i++ {
		t := float64(i)
		s.Global.T = append(s.Global.T, t)
		backoff := i >= 10 && i < 20
		ok, refused, delay, level, conc := 4.0, 0.0, 1.0, 0.0, 4.0
		if backoff {
			ok, refused, delay, level, conc = 1, 2, 2, 1, 1
		}
		for _, sc := range []*metrics.ScopeSeries{&strictS, &fast} {
			sc.T = append(sc.T, t)
		}
		strictS.OK, strictS.Refused, strictS.Errors = append(strictS.OK, ok), append(strictS.Refused, refused), append(strictS.Errors, 0)
		strictS.InFlight, strictS.Delay = append(strictS.InFlight, conc), append(strictS.Delay, delay)
		strictS.Level, strictS.Concurrency = append(strictS.Level, level), append(strictS.Concurrency, conc)
		fast.OK, fast.Refused, fast.Errors = append(fast.OK, 50), append(fast.Refused, 0), append(fast.Errors, float64(i%7/6))
		fast.InFlight, fast.Delay = append(fast.InFlight, 8), append(fast.Delay, 0)
		fast.Level, fast.Concurrency = append(fast.Level, 0), append(fast.Concurrency, 8)
		s.Global.OK = append(s.Global.OK, ok+50)
		s.Global.Refused = append(s.Global.Refused, refused)
		s.Global.Errors = append(s.Global.Errors, float64(i%7/6))
		s.Global.InFlight = append(s.Global.InFlight, conc+8)
	}
	s.Scopes = []metrics.ScopeSeries{fast, strictS}
	snap := metrics.Snapshot{At: t0.Add(30 * time.Second), Start: t0, End: t0.Add(30 * time.Second),
		Global: metrics.Counts{Requests: 1620, OK: 1580, HTTP429: 20, Responses: 1600, NetworkErrors: 4, PeakInFlight: 12, Seconds: 30, OKPerSecond: 52.7},
		Scopes: []metrics.ScopeSnapshot{
			{Scope: "fast.example", Counts: metrics.Counts{Requests: 1500, OK: 1496, NetworkErrors: 4, Seconds: 30, OKPerSecond: 49.9, PeakInFlight: 8}},
			{Scope: strict, Counts: metrics.Counts{Requests: 120, OK: 100, HTTP429: 20, Seconds: 30, OKPerSecond: 3.3, PeakInFlight: 4},
				BackoffSeconds: 10, Delay: time.Second},
		}}
	return metrics.Dump{Spider: "sample", Reason: "finished", Metrics: snap, Series: &s,
		Stats: map[string]float64{
			"downloader/request_count": 1620, "downloader/response_ok_count": 1580, "downloader/response_status_count/200": 1580,
			"downloader/response_status_count/429": 20, "downloader/exception_type_count/DownloadFailedError": 4,
			"downloader/exception_count": 4, "item_scraped_count": 1500, "start_time": float64(t0.Unix()) + 0.25,
			"elapsed_time_seconds": 30, "offsite/filtered": 3, "dupefilter/filtered": 40,
		},
		Limits: map[string]metrics.ScopeLimits{strict: {ConfiguredDelay: 1, ConfiguredConcurrency: 4, Delay: 1, Concurrency: 4},
			"fast.example": {ConfiguredConcurrency: 8, Concurrency: 8}}}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func render(t *testing.T, d *Data) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, d, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestReportFromDump(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	// A custom scope name is any string: it must come out escaped.
	writeJSON(t, path, sampleDump(`api<script>alert(1)</script>`))
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, d)
	for _, want := range []string{
		"<title>gocrawl report: sample</title>", "finished, after 30s, started 2026-11-30 12:00:00.250 UTC",
		`data-plot="global-responses"`, `data-plot="global-inflight"`,
		`data-plot="scope0-responses"`, `data-plot="scope1-inflight"`, `data-plot="scope1-delay"`, `data-plot="scope1-level"`,
		"api&lt;script&gt;alert(1)&lt;/script&gt;",
		"configured: delay 1s, concurrency 4",
		`<td class="k">429</td><td>20</td>`, `<td class="k">DownloadFailedError</td><td>4</td>`,
		`<td class="k">offsite</td><td>3</td>`, `<td class="k">duplicate</td><td>40</td>`,
		"Slowest scopes",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("a scope name reached the page unescaped")
	}
	if strings.Contains(page, "<script") {
		t.Error("a finished crawl's report has a script")
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Error("the page refers to the network")
	}
	// The configured limits are drawn: a dashed line at concurrency 4 and
	// at delay 1 s on the strict scope's plots.
	if n := strings.Count(page, `class="ref c-limit"`); n < 3 {
		t.Errorf("%d reference lines, want the configured limits of both scopes", n)
	}
	// Every plot has a path for each of its lines with data.
	paths := regexp.MustCompile(`<path class="line c-[a-z]+" d="M[0-9.]+ [0-9.]+[HLV]`).FindAllString(page, -1)
	if len(paths) < 2+1+4*2 {
		t.Errorf("%d drawn lines", len(paths))
	}
}

func TestReportFromCSV(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	d := sampleDump("strict.example")
	if err := metrics.WriteDump(path, d); err != nil {
		t.Fatal(err)
	}
	data, err := Load(metrics.ScopesCSVPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Scopes) != 2 || data.Scopes[1].Scope != "strict.example" || data.Scopes[1].HTTP429 != 20 || data.Scopes[1].BackoffSeconds != 10 {
		t.Fatalf("scopes from CSV: %+v", data.Scopes)
	}
	page := render(t, data)
	if !strings.Contains(page, "no time series") || !strings.Contains(page, `<td class="k">strict.example</td><td>120</td>`) {
		t.Errorf("CSV report:\n%s", page)
	}
}

func TestReportFromJob(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job")
	j, err := jobdir.Open(dir, "quotes", jobdir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.SaveStats(map[string]float64{"downloader/request_count": 12, "downloader/response_status_count/503": 2}); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := j.SaveThrottling([]throttling.ScopeSnapshot{{Scope: "slow.example", Delay: 8, BackoffLevel: 3, Concurrency: 1, BlockedUntil: future},
		{Scope: "fine.example", Delay: 0, Concurrency: 8}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, d)
	for _, want := range []string{"gocrawl report: quotes", "Job directory", "0 requests queued",
		`<td class="k">slow.example</td><td class="k">delay 8s, level 3, concurrency 1, blocked until`,
		"A job directory keeps no time series", `<td class="k">503</td><td>2</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "fine.example</td><td class=\"k\">delay") {
		t.Error("a scope not in backoff is listed as in backoff")
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "items.jsonl")
	os.WriteFile(notJSON, []byte("not json"), 0o644)
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte(`{"url": "x"}`), 0o644)
	badCSV := filepath.Join(dir, "x.csv")
	os.WriteFile(badCSV, []byte("url,title\na,b\n"), 0o644)
	for _, p := range []string{notJSON, empty, badCSV} {
		if _, err := Load(p); !errors.Is(err, ErrSource) {
			t.Errorf("Load(%s) = %v, want ErrSource", filepath.Base(p), err)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
	if _, err := Load(dir); err == nil {
		t.Error("Load of a directory that is not a job succeeded")
	}
}

func TestLiveHandler(t *testing.T) {
	n := 0
	h := Handler(func() *Data {
		n++
		return FromDump(sampleDump("strict.example"), "the running crawl")
	}, Options{}, 3*time.Second)
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(res.Body)
	res.Body.Close()
	page := b.String()
	for _, want := range []string{`data-live="true"`, "live, refreshed every 3 s", `<meta http-equiv="refresh" content="3">`, "<script>", `data-plot="scope1-delay"`} {
		if !strings.Contains(page, want) {
			t.Errorf("live page lacks %q", want)
		}
	}
	if res.Header.Get("Cache-Control") != "no-store" || n != 1 {
		t.Errorf("Cache-Control %q, %d renders", res.Header.Get("Cache-Control"), n)
	}
	if res, err := http.Get(srv.URL + "/nope"); err != nil || res.StatusCode != 404 {
		t.Errorf("GET /nope: %v %v", res.StatusCode, err)
	}
}

func TestTicks(t *testing.T) {
	for _, tt := range []struct {
		max     float64
		integer bool
		want    []float64
	}{
		{0, false, []float64{0, 0.5, 1}},
		{3, true, []float64{0, 1, 2, 3}},
		{9.5, false, []float64{0, 5, 10}},
		{600, false, []float64{0, 200, 400, 600}},
		{0.3, true, []float64{0, 1}},
	} {
		got := niceTicks(tt.max, tt.integer)
		if len(got) != len(tt.want) {
			t.Errorf("niceTicks(%v) = %v, want %v", tt.max, got, tt.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-9 {
				t.Errorf("niceTicks(%v) = %v, want %v", tt.max, got, tt.want)
				break
			}
		}
	}
	for in, want := range map[float64]string{0: "0", 0.5: "500ms", 30: "30s", 90: "1m30s", 120: "2m", 5400: "1h30m", 7200: "2h"} {
		if got := formatSeconds(in); got != want {
			t.Errorf("formatSeconds(%v) = %q, want %q", in, got, want)
		}
	}
	if got := timeTicks(30); len(got) != 7 || got[6] != 30 {
		t.Errorf("timeTicks(30) = %v", got)
	}
	if got := FormatStat("finish_time", 1796111312.106); got != "2026-12-01 07:48:32.106 UTC" {
		t.Errorf("FormatStat = %q", got)
	}
}
