package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

// endless serves /n linking to /n+1 and /n+2 forever; trigger is called
// (once) when the n-th page is requested.
func endless(t *testing.T, n int64, trigger func()) *httptest.Server {
	var count atomic.Int64
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		if count.Add(1) >= n {
			once.Do(trigger)
		}
		var i int
		fmt.Sscanf(r.URL.Path, "/%d", &i)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><head><title>%d</title></head><body><a href="/%d">n</a><a href="/%d">n</a></body></html>`, i, i+1, i+2)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSignalStopsGracefullyWithValidJSON(t *testing.T) {
	sig := make(chan os.Signal, 2)
	srv := endless(t, 5, func() { sig <- os.Interrupt })
	out := filepath.Join(t.TempDir(), "items.json")
	var stdout, stderr bytes.Buffer
	app := &App{Stdout: &stdout, Stderr: &stderr, Signals: sig}
	code := app.run(context.Background(), []string{"run", "follow", "-a", "start_urls=" + srv.URL + "/0", "-O", out,
		"-s", "LOG_FORMAT=json", "-s", "CONCURRENT_REQUESTS=2"}, Program{})
	// run needs the spider registered.
	if code != ExitUsage {
		t.Fatalf("without spiders: exit %d, want %d", code, ExitUsage)
	}
	stderr.Reset()
	code = app.run(context.Background(), []string{"run", "follow", "-a", "start_urls=" + srv.URL + "/0", "-O", out,
		"-s", "LOG_FORMAT=json", "-s", "CONCURRENT_REQUESTS=2"}, Program{Spiders: spidersForTest()})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	// One format per stream: every line of stderr, the summary included,
	// is a JSON record.
	recs := jsonLines(t, stderr.String())
	if !hasRecord(recs, "message", "shutting down gracefully: in-flight requests finish, exports are closed; press Ctrl-C again to abort") {
		t.Errorf("no shutdown warning in:\n%s", stderr.String())
	}
	if !hasRecord(recs, "message", "crawl summary") || !hasRecord(recs, "reason", "shutdown") {
		t.Errorf("no crawl summary record with reason shutdown in:\n%s", stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var items []follow.Page
	if err := json.Unmarshal(b, &items); err != nil {
		t.Fatalf("items.json is not a valid array after a graceful stop: %v\n%s", err, b)
	}
	if len(items) < 5 {
		t.Errorf("%d items, want at least the 5 pages fetched before the signal", len(items))
	}
}

func TestContextCancelStopsGracefully(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := endless(t, 3, cancel)
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"run", "follow", "-a", "start_urls=" + srv.URL + "/0", "-o", "-", "-t", "jsonl",
		"-s", "LOG_LEVEL=ERROR"}, &stdout, &stderr, spidersForTest()...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 3 {
		t.Errorf("stdout has %d items, want at least 3:\n%s", len(lines), stdout.String())
	}
	for _, l := range lines {
		var p follow.Page
		if err := json.Unmarshal([]byte(l), &p); err != nil || p.URL == "" {
			t.Errorf("line %q: %v", l, err)
		}
	}
	// stderr is not a terminal: the summary is a JSON record.
	if recs := jsonLines(t, stderr.String()); !hasRecord(recs, "message", "crawl summary") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// jsonLines decodes every line of s as a JSON object, failing the test on
// a line that is not one.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("not a JSON record: %q", l)
			continue
		}
		out = append(out, m)
	}
	return out
}

func hasRecord(recs []map[string]any, key string, value any) bool {
	for _, r := range recs {
		if r[key] == value {
			return true
		}
	}
	return false
}

func spidersForTest() []spider.Spider { return []spider.Spider{follow.New()} }

// The live report is served at METRICS_ADDR / while the crawl runs.
func TestLiveReportDuringCrawl(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var page string
	var status int
	srv := endless(t, 20, func() {
		res, err := http.Get("http://" + addr + "/")
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			page, status = string(b), res.StatusCode
		}
		cancel()
	})
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"run", "follow", "-a", "start_urls=" + srv.URL + "/0", "-s", "METRICS_ADDR=" + addr,
		"-s", "METRICS_SERIES_INTERVAL=0.01", "-s", "LOG_FORMAT=json"}, &stdout, &stderr, spidersForTest()...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if status != 200 {
		t.Fatalf("GET / during the crawl: status %d", status)
	}
	for _, want := range []string{"<title>gocrawl report: follow</title>", `data-live="true"`, "running", `data-plot="global-responses"`, "<script>"} {
		if !strings.Contains(page, want) {
			t.Errorf("live page lacks %q", want)
		}
	}
	if !hasRecord(jsonLines(t, stderr.String()), "report", "http://"+addr+"/") {
		t.Errorf("the live report's address is not logged:\n%s", stderr.String())
	}
}
