package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/observe/monitor"
	"github.com/gocrawl/gocrawl/spider"
)

// quotesSite serves /0 to /n-1; every page holds two quotes, and the
// quote of page 2 has no author.
func quotesSite(t *testing.T, n int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/%d", &i); err != nil || i >= n {
			http.NotFound(w, r)
			return
		}
		author := fmt.Sprintf(`<small class="author">A%d</small>`, i)
		if i == 2 {
			author = ""
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><head><title>%d</title></head><body>
<div class="quote"><span class="text">q%d</span>%s</div>
<div class="quote"><span class="text">r%d</span><small class="author">B</small></div>
<a href="/%d">next</a></body></html>`, i, i, author, i, i+1)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type quoteItem struct {
	Text   string `json:"text" monitor:"required"`
	Author string `json:"author" monitor:"required,pattern=^[A-Z]"`
	URL    string `json:"url" monitor:"required,pattern=^http://127\\.0\\.0\\.1:"`
}

// quotesSpider yields quoteItem structs and may bring monitors of its own.
type quotesSpider struct {
	spider.Base
	checks []monitor.Check
}

func (*quotesSpider) Name() string { return "quotes" }

func (s *quotesSpider) Parse(_ context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	doc.Find("div.quote").Each(func(_ int, q *goquery.Selection) {
		out.Item(quoteItem{Text: q.Find(".text").Text(), Author: q.Find(".author").Text(), URL: res.URL.String()})
	})
	out.FollowAll(res, doc.Find("a"), s.Parse)
	return nil
}

func (s *quotesSpider) Monitors() []monitor.Check { return s.checks }

// webhook records the bodies POSTed to it.
func webhook(t *testing.T) (string, <-chan []byte) {
	got := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", got
}

func runCLI(t *testing.T, sp spider.Spider, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	app := &App{Stdout: &stdout, Stderr: &stderr}
	code := app.run(context.Background(), append([]string{"run", sp.Name(), "-s", "LOG_LEVEL=WARNING", "-s", "ROBOTSTXT_OBEY=false"}, args...), Program{Spiders: []spider.Spider{sp}})
	return code, stderr.String()
}

// Items missing a required field (JSON Schema): the crawl runs to its end,
// writes every item, then exits 3 with the reasons; the results file in
// the JOBDIR and the webhook say the same.
func TestRunMonitorSchemaFailsWithExit3(t *testing.T) {
	srv := quotesSite(t, 4)
	dir := t.TempDir()
	schema := filepath.Join(dir, "quote.schema.json")
	os.WriteFile(schema, []byte(`{"type": "object", "required": ["text", "author"],
		"properties": {"author": {"type": "string", "minLength": 1}}}`), 0o644)
	hookURL, hooks := webhook(t)
	job, items := filepath.Join(dir, "job"), filepath.Join(dir, "items.jsonl")
	code, stderr := runCLI(t, &quotesSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/0"}}},
		"-O", items, "-s", "JOBDIR="+job, "-s", "MONITOR_ITEM_SCHEMA="+schema, "-s", "MONITOR_MIN_ITEMS=5",
		"-s", "MONITOR_WEBHOOK_URL="+hookURL)
	if code != ExitMonitor {
		t.Fatalf("exit %d, want %d\n%s", code, ExitMonitor, stderr)
	}
	if !strings.Contains(stderr, "monitors failed:\n  item_validation: 1 of 8 items invalid, more than MONITOR_MAX_INVALID_ITEMS 0; first: /author: minLength: got 0, want 1") {
		t.Errorf("stderr lacks the reason:\n%s", stderr)
	}
	if b, _ := os.ReadFile(items); bytes.Count(b, []byte("\n")) != 8 {
		t.Errorf("the invalid item is exported too (MONITOR_DROP_INVALID_ITEMS is off): %s", b)
	}
	// The file the crawl service reads, with its own struct of the same shape.
	var res struct {
		OK       bool   `json:"ok"`
		Final    bool   `json:"final"`
		At       string `json:"checked_at"`
		Failures []struct {
			Monitor string `json:"monitor"`
			Reason  string `json:"reason"`
		} `json:"failures"`
		Checks []struct {
			Monitor string `json:"monitor"`
			OK      bool   `json:"ok"`
		} `json:"checks"`
	}
	b, err := os.ReadFile(filepath.Join(job, "monitors.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.OK || !res.Final || res.At == "" || len(res.Failures) != 1 || res.Failures[0].Monitor != "item_validation" ||
		len(res.Checks) != 2 || res.Checks[0].Monitor != "min_items" || !res.Checks[0].OK {
		t.Errorf("monitors.json:\n%s", b)
	}
	if body := <-hooks; !bytes.Equal(body, mustCompact(t, b)) {
		t.Errorf("webhook body\n%s\nis not the results file\n%s", body, b)
	}
}

func mustCompact(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The struct tags of the spider's items, a spider's own monitor, and the
// exit statuses: 0 when every monitor passes, 3 when one fails, 2 for a
// bad monitor setting.
func TestRunMonitorStructTagsAndExitStatuses(t *testing.T) {
	srv := quotesSite(t, 4)
	results := filepath.Join(t.TempDir(), "out", "monitors.json")
	fewPages := monitor.NewCheck("pages", func(_ context.Context, s monitor.Snapshot) monitor.Outcome {
		if n := s.Get("downloader/response_status_count/200"); n < 10 {
			return monitor.Fail("%.0f pages, fewer than 10", n)
		}
		return monitor.Pass("enough pages")
	})
	for _, tc := range []struct {
		name   string
		checks []monitor.Check
		args   []string
		code   int
		stderr string
	}{
		{"an invalid item dropped; the drop share passes", nil, []string{"-s", "MONITOR_ITEM_STRUCT=true", "-s", "MONITOR_DROP_INVALID_ITEMS=true",
			"-s", "MONITOR_MAX_INVALID_ITEMS=1", "-s", "MONITOR_MAX_DROP_SHARE=20%"}, ExitOK, ""},
		{"the invalid item fails", nil, []string{"-s", "MONITOR_ITEM_STRUCT=true"}, ExitMonitor,
			"item_validation: 1 of 8 items invalid, more than MONITOR_MAX_INVALID_ITEMS 0; first: author: required, but missing"},
		{"drop share over", nil, []string{"-s", "MONITOR_ITEM_STRUCT=true", "-s", "MONITOR_DROP_INVALID_ITEMS=true",
			"-s", "MONITOR_MAX_INVALID_ITEMS=1", "-s", "MONITOR_MAX_DROP_SHARE=0.1"}, ExitMonitor,
			"max_drop_share: 1 of 8 items are dropped (12.5%), more than MONITOR_MAX_DROP_SHARE 10%"},
		{"the spider's own monitor", []monitor.Check{fewPages}, nil, ExitMonitor, "pages: 4 pages, fewer than 10"},
		{"monitors off", []monitor.Check{fewPages}, []string{"-s", "MONITOR_ENABLED=false"}, ExitOK, ""},
		{"bad share", nil, []string{"-s", "MONITOR_MAX_ERROR_SHARE=5"}, ExitUsage, "MONITOR_MAX_ERROR_SHARE: 5 is not a share between 0 and 1"},
		{"bad schema file", nil, []string{"-s", "MONITOR_ITEM_SCHEMA=/nonexistent/schema.json"}, ExitUsage, "invalid setting MONITOR_ITEM_SCHEMA: bad JSON Schema /nonexistent/schema.json"},
		{"results file not writable", nil, []string{"-s", "MONITOR_MIN_ITEMS=1", "-s", "MONITOR_RESULTS_FILE=/proc/gocrawl/monitors.json"}, ExitUsage, "MONITOR_RESULTS_FILE /proc/gocrawl/monitors.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(results)
			sp := &quotesSpider{Base: spider.Base{StartURLs: []string{srv.URL + "/0"}}, checks: tc.checks}
			code, stderr := runCLI(t, sp, append([]string{"-s", "MONITOR_RESULTS_FILE=" + results}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d with %q in:\n%s", code, tc.code, tc.stderr, stderr)
			}
			r, err := monitor.ReadFile(results)
			switch {
			case tc.code == ExitUsage || strings.Contains(tc.name, "off"):
				if err == nil {
					t.Errorf("results written: %+v", r)
				}
			case err != nil:
				t.Error(err)
			case r.OK != (tc.code == ExitOK) || !r.Final:
				t.Errorf("results %+v", r)
			}
		})
	}
}
