package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/spider"
)

// everyLink follows every link of every page and leaves the allowed
// domains (its start URL's host) to the offsite middleware.
type everyLink struct{ spider.Base }

func (*everyLink) Name() string { return "everylink" }

func (s *everyLink) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.Item(map[string]any{"url": res.URL.String()})
	out.FollowAll(res, res.Find("a[href]"), nil)
	return nil
}

// runInProcess runs the command line with the everyLink spider starting
// at start.
func runInProcess(t *testing.T, start string, args ...string) result {
	t.Helper()
	sp := &everyLink{Base: spider.Base{StartURLs: []string{start}, Domains: []string{"127.0.0.1"}}}
	var stdout, stderr bytes.Buffer
	code := cli.Run(t.Context(), append([]string{"run", "everylink"}, args...), &stdout, &stderr, sp)
	return result{code, stdout.String(), stderr.String()}
}

// dropSite has a page for every kind of dropped request: a 404 (HTTP
// error), a robots.txt-disallowed page, an offsite link, a chain deeper
// than DEPTH_LIMIT 2, and links to pages already seen.
func dropSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /secret\n")
	})
	html := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><head><title>t</title></head><body>"+body+"</body></html>")
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<a href="/a">a</a><a href="/missing">m</a><a href="/secret">s</a><a href="https://elsewhere.example/">x</a><a href="/d1">d</a>`)
	})
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) { html(w, `<a href="/">home</a><a href="/a">self</a>`) })
	mux.HandleFunc("/d1", func(w http.ResponseWriter, r *http.Request) { html(w, `<a href="/d2">d2</a>`) })
	mux.HandleFunc("/d2", func(w http.ResponseWriter, r *http.Request) { html(w, `<a href="/d3">d3</a>`) })
	mux.HandleFunc("/d3", func(w http.ResponseWriter, r *http.Request) { html(w, `deep`) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func records(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stream), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON record: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// TestDropsAndResponsesLogged: at DEBUG every response has a line with its
// status, method, URL, referer, bytes, latency and scope; at INFO the first
// drop of each kind has a line, and the summary counts every kind.
func TestDropsAndResponsesLogged(t *testing.T) {
	srv := dropSite(t)
	args := []string{"-s", "DEPTH_LIMIT=2", "-s", "RETRY_ENABLED=false", "-s", "LOG_FORMAT=json"}
	r := runInProcess(t, srv.URL+"/", append(args, "-s", "LOG_LEVEL=DEBUG")...)
	r.expect(t, 0, nil, nil)
	var responses int
	for _, rec := range records(t, r.stderr) {
		if rec["message"] != "response" {
			continue
		}
		responses++
		for _, k := range []string{"status", "method", "url", "referer", "bytes", "latency", "scope"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("response line without %s: %v", k, rec)
			}
		}
		if rec["url"] == srv.URL+"/a" && rec["referer"] != srv.URL+"/" {
			t.Errorf("response line of /a: referer %v", rec["referer"])
		}
		if lat, _ := rec["latency"].(string); !strings.HasSuffix(lat, "s") {
			t.Errorf("latency %q has no unit", lat)
		}
	}
	// /, /a, /missing, /d1, /d2 (robots.txt is fetched outside the crawl's
	// responses... and counted too).
	if responses < 5 {
		t.Errorf("%d response lines at DEBUG, want one per response:\n%s", responses, r.stderr)
	}

	r = runInProcess(t, srv.URL+"/", args...)
	r.expect(t, 0, nil, nil)
	recs := records(t, r.stderr)
	firsts := map[string]int{}
	var summary map[string]any
	for _, rec := range recs {
		msg, _ := rec["message"].(string)
		switch {
		case msg == "response":
			t.Errorf("a response line at INFO: %v", rec)
		case msg == "crawl summary":
			summary = rec
		case strings.HasPrefix(msg, "request dropped"):
			firsts[rec["reason"].(string)]++
		case strings.HasPrefix(msg, "ignoring request beyond DEPTH_LIMIT"):
			firsts["depth"]++
		case strings.HasPrefix(msg, "filtered duplicate request"):
			firsts["duplicate"]++
		case strings.HasPrefix(msg, "filtered offsite request"):
			firsts["offsite"]++
		}
	}
	for _, kind := range []string{"robots.txt", "httperror", "depth", "duplicate", "offsite"} {
		if firsts[kind] != 1 {
			t.Errorf("%d INFO lines for the first %s drop, want 1:\n%s", firsts[kind], kind, r.stderr)
		}
	}
	if summary == nil {
		t.Fatalf("no crawl summary record:\n%s", r.stderr)
	}
	dropped := map[string]float64{}
	for _, d := range summary["dropped"].([]any) {
		m := d.(map[string]any)
		dropped[m["class"].(string)] = m["count"].(float64)
	}
	for _, kind := range []string{"robots.txt", "http error", "depth", "duplicate", "offsite"} {
		if dropped[kind] < 1 {
			t.Errorf("the summary counts no %s drop: %v", kind, summary["dropped"])
		}
	}
	// The text summary of a terminal-style stream has the same line.
	r = runInProcess(t, srv.URL+"/", "-s", "DEPTH_LIMIT=2", "-s", "RETRY_ENABLED=false", "-s", "LOG_FORMAT=console")
	r.expect(t, 0, nil, []string{"dropped ", "offsite: 1", "robots.txt: 1", "http error: 1", "depth: 1", "duplicate: "})
}

// TestLogFile: LOG_FILE receives the logs and the summary, JSON unless
// LOG_FORMAT says console; standard error stays empty.
func TestLogFile(t *testing.T) {
	srv := dropSite(t)
	dir := t.TempDir()
	r := gocrawl(t, dir, []string{"GOCRAWL_LOG_FORMAT=auto"}, "run", "follow", "-a", "start_urls="+srv.URL+"/", "-s", "LOG_FILE=crawl.log")
	r.expect(t, 0, nil, nil)
	if r.stderr != "" {
		t.Errorf("stderr with LOG_FILE: %q", r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "crawl.log"))
	if err != nil {
		t.Fatal(err)
	}
	recs := records(t, string(b))
	last := recs[len(recs)-1]
	if last["message"] != "crawl summary" || last["level"] != "info" {
		t.Errorf("last record of LOG_FILE: %v", last)
	}
	if ts, _ := last["time"].(string); len(ts) != len("2006-01-02T15:04:05.000Z") {
		t.Errorf("timestamp %q is not to the millisecond", ts)
	}
}

// TestReportCommand: a run with STATS_DUMP_FILE, then gocrawl report.
func TestReportCommand(t *testing.T) {
	srv := dropSite(t)
	dir := t.TempDir()
	gocrawl(t, dir, nil, "run", "follow", "-a", "start_urls="+srv.URL+"/", "-s", "STATS_DUMP_FILE=out/run.json",
		"-s", "METRICS_SERIES_INTERVAL=0.05", "-s", "JOBDIR=job", "-s", "LOG_LEVEL=WARNING").expect(t, 0, nil, nil)
	r := gocrawl(t, dir, nil, "report", "out/run.json")
	r.expect(t, 0, []string{"out/run.html\n"}, nil)
	page, err := os.ReadFile(filepath.Join(dir, "out", "run.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>gocrawl report: follow</title>", `data-plot="global-responses"`, `data-plot="scope0-delay"`,
		`<td class="k">404</td><td>1</td>`, `<td class="k">robots.txt</td>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("run.html lacks %q", want)
		}
	}
	gocrawl(t, dir, nil, "report", "out/run.scopes.csv", "-o", "-").expect(t, 0, []string{"<!DOCTYPE html>", "no time series"}, nil)
	gocrawl(t, dir, nil, "report", "job").expect(t, 0, []string{"job.html\n"}, nil)
	gocrawl(t, dir, nil, "report", "nope.json").expect(t, 2, nil, []string{"report nope.json: "})
	os.WriteFile(filepath.Join(dir, "items.json"), []byte(`[{"a": 1}]`), 0o644)
	gocrawl(t, dir, nil, "report", "items.json").expect(t, 2, nil, []string{"not a crawl's stats dump, scopes CSV or job directory"})
}
