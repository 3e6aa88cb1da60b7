package cli_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/gocrawlbin"
)

// binary is the gocrawl command built once for this test binary.
var binary string

func TestMain(m *testing.M) { gocrawlbin.Main(m, &binary) }

type result struct {
	code           int
	stdout, stderr string
}

// gocrawl runs the binary in dir with args and extra environment
// variables; GOCRAWL_ variables of the test's own environment are removed.
func gocrawl(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	// Human-readable logs and summaries, as on a terminal; tests of the
	// JSON stream pass GOCRAWL_LOG_FORMAT=json (the last value wins).
	r, err := gocrawlbin.Run(context.Background(), binary, dir, append([]string{"GOCRAWL_LOG_FORMAT=console"}, env...), args...)
	if err != nil {
		t.Fatal(err)
	}
	return result{r.Code, r.Stdout, r.Stderr}
}

func (r result) expect(t *testing.T, code int, stdout, stderr []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stdout {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	for _, s := range stderr {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

func TestCommands(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("# settings\nCONCURRENT_REQUESTS: 4\nDOWNLOAD_DELAY: slow\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "good.yaml"), []byte("DOWNLOAD_DELAY: 1.5\n"), 0o644)
	tests := []struct {
		name           string
		env            []string
		args           []string
		code           int
		stdout, stderr []string
	}{
		{"version", nil, []string{"version"}, 0, []string{"gocrawl 0.1.0"}, nil},
		{"list", nil, []string{"list"}, 0, []string{"books\nbooks_crawl\nbooks_sitemap\nfollow\nquotes\nquotes_html\n"}, nil},
		{"unknown command", nil, []string{"crawl"}, 2, nil, []string{`unknown command "crawl"`}},
		{"unknown flag", nil, []string{"run", "follow", "--nope"}, 2, nil, []string{"unknown flag: --nope", "gocrawl run --help"}},
		{"settings bad name", nil, []string{"settings", "DOWNLOAD_DELEY"}, 2, nil,
			[]string{"unknown setting DOWNLOAD_DELEY: did you mean DOWNLOAD_DELAY?"}},
		{"settings one value", nil, []string{"settings", "download_delay", "-s", "DOWNLOAD_DELAY=3"}, 0, []string{"3\n"}, nil},
		{"settings with origin", []string{"GOCRAWL_CONCURRENT_REQUESTS=7"}, []string{"settings", "--settings", "good.yaml", "DOWNLOAD_DELAY", "CONCURRENT_REQUESTS", "LOG_LEVEL"}, 0,
			[]string{"DOWNLOAD_DELAY", "1.5", "file (good.yaml:1)", "7", "env (GOCRAWL_CONCURRENT_REQUESTS)", "INFO", "default"}, nil},
		{"settings file type error", nil, []string{"settings", "--settings", "bad.yaml"}, 2, nil,
			[]string{`bad.yaml:3: invalid value DOWNLOAD_DELAY: "slow" is not a number (expected non-negative number, got string "slow")`}},
		{"missing explicit settings file", nil, []string{"settings", "--settings", "nope.yaml"}, 2, nil,
			[]string{"nope.yaml: cannot read settings file: the file does not exist"}},
		{"unknown env setting", []string{"GOCRAWL_DOWNLOAD_DELAI=1"}, []string{"settings"}, 2, nil,
			[]string{"GOCRAWL_DOWNLOAD_DELAI: unknown setting DOWNLOAD_DELAI: did you mean DOWNLOAD_DELAY?"}},
		{"all settings errors at once", []string{"GOCRAWL_CONCURRENT_REQUEST=1"}, []string{"settings", "--settings", "bad.yaml", "-s", "CONCURENT_REQUESTS=3",
			"-s", "LOG_LEVEL=LOUD", "-s", `THROTTLING_SCOPES={"a.com": {"concurency": 2}}`}, 2, nil,
			[]string{"5 settings problems", "bad.yaml:3", "GOCRAWL_CONCURRENT_REQUEST: unknown setting CONCURRENT_REQUEST: did you mean CONCURRENT_REQUESTS?",
				"did you mean CONCURRENT_REQUESTS?", `"LOUD" is not a log level`, `invalid setting THROTTLING_SCOPES: scope "a.com": key "concurency": unknown key; did you mean "concurrency"?`}},
		{"unrelated GOCRAWL_ variable warns", []string{"GOCRAWL_BIN=/usr/bin/gocrawl"}, []string{"settings", "DOWNLOAD_DELAY"}, 0, []string{"0\n"},
			[]string{"warning: ignoring environment variable GOCRAWL_BIN: BIN is not a setting"}},
		{"unrelated GOCRAWL_ variable does not stop a run", []string{"GOCRAWL_HOME=/x"}, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/",
			"-s", "ROBOTSTXT_OBEY=false", "-s", "RETRY_ENABLED=false"}, 0, nil, []string{"ignoring environment variable GOCRAWL_HOME", "--- follow: finished"}},
		{"every run problem at once", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-a", "max_depth=x", "-O", "good.yaml/x.jsonl",
			"-s", "SCHEDULER=Nope"}, 2, nil, []string{"3 problems", `max_depth="x"`, "good.yaml is not a directory", `unknown scheduler "Nope"`}},
		{"stats dump not writable", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-s", "STATS_DUMP_FILE=/proc/gocrawl-test/run.json"}, 2, nil,
			[]string{"STATS_DUMP_FILE /proc/gocrawl-test/run.json: cannot"}},
		{"output not writable", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-O", "/proc/gocrawl-test/x.jsonl"}, 2, nil,
			[]string{"feed /proc/gocrawl-test/x.jsonl: cannot"}},
		{"--version", nil, []string{"--version"}, 0, []string{"gocrawl 0.1.0 ("}, nil},
		{"unknown root flag", nil, []string{"--nope"}, 2, nil, []string{"unknown flag: --nope (see 'gocrawl --help')"}},
		{"unknown spider", nil, []string{"run", "nope"}, 2, nil, []string{`unknown spider "nope"; known spiders: books, books_crawl, books_sitemap, follow, quotes, quotes_html`}},
		{"run without spider", nil, []string{"run"}, 2, nil, []string{"run expects one spider name"}},
		{"follow without start urls", nil, []string{"run", "follow"}, 2, nil, []string{"no start URLs: pass -a start_urls=URL"}},
		{"follow with bad args", nil, []string{"run", "follow", "-a", "start_urls=ftp://x/", "-a", "max_depth=x"}, 2, nil,
			[]string{"max_depth=\"x\": expected a whole number", "ftp://x/"}},
		{"malformed -a", nil, []string{"run", "follow", "-a", "start_urls"}, 2, nil, []string{`-a "start_urls": expected NAME=VALUE`}},
		{"-o and -O together", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-o", "a.jsonl", "-O", "b.jsonl"}, 2, nil,
			[]string{"not both"}},
		{"unknown output format", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-O", "items.xml"}, 2, nil,
			[]string{"cannot tell the format of \"items.xml\"", "-t jsonl|json|csv"}},
		{"same file twice", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-o", "a.jsonl", "-o", "./a.jsonl"}, 2, nil,
			[]string{"two feed exports write to ./a.jsonl"}},
		{"output not appendable", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-o", "bad.yaml", "-t", "json"}, 2, nil,
			[]string{"feed bad.yaml: cannot append: the file is not a JSON array; overwrite it with -O"}},
		{"output under a file", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-O", "good.yaml/x.csv"}, 2, nil,
			[]string{"good.yaml is not a directory"}},
		{"render without a browser", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-a", "render=true",
			"-s", "RENDER_BROWSER_PATH=/nonexistent/chromium"}, 2, nil,
			[]string{"no Chromium browser found", "RENDER_BROWSER_PATH", "/nonexistent/chromium"}},
		{"no browser in PATH", []string{"PATH=/nonexistent"}, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-s", "RENDER_JS=true"}, 2, nil,
			[]string{"apt-get install chromium", "RENDER_BROWSER_PATH"}},
		{"bad RENDER_WAIT", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-s", "RENDER_WAIT=idle"}, 2, nil,
			[]string{`RENDER_WAIT: "idle" is not a wait mode`}},
		{"bad PROXY_LIST", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-s", `PROXY_LIST=["http://u:s3cret@nohost"]`}, 2, nil,
			[]string{"PROXY_LIST[0]: http://u:xxxxx@nohost: want http://[user:pass@]host:port"}},
		{"bad LOG_LEVEL", nil, []string{"run", "follow", "-a", "start_urls=http://127.0.0.1:1/", "-s", "LOG_LEVEL=LOUD"}, 2, nil,
			[]string{`-s LOG_LEVEL=LOUD: invalid value LOG_LEVEL: "LOUD" is not a log level; use one of DEBUG, INFO`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gocrawl(t, dir, tt.env, tt.args...).expect(t, tt.code, tt.stdout, tt.stderr)
		})
	}
}

// `gocrawl settings` shows secrets redacted, in the table, in --json and
// alone, values and origins alike.
func TestSettingsRedactsSecrets(t *testing.T) {
	dir := t.TempDir()
	secrets := []string{
		"-s", "MONITOR_WEBHOOK_URL=https://hooks.example/services/s3cret",
		"-s", "REDIS_URL=redis://:s3cret@127.0.0.1:6379/0",
		"-s", "PROXY_LIST=[http://u:s3cret@proxy.example:8080]",
		"-s", `FEEDS={"postgresql://crawl:s3cret@127.0.0.1/items": {}}`,
		"-s", `DEFAULT_REQUEST_HEADERS={Authorization: "Bearer s3cret"}`,
	}
	for _, args := range [][]string{
		append([]string{"settings"}, secrets...),
		append([]string{"settings", "--json"}, secrets...),
		append([]string{"settings", "MONITOR_WEBHOOK_URL"}, secrets...),
		append([]string{"settings", "REDIS_URL"}, secrets...),
	} {
		r := gocrawl(t, dir, nil, args...)
		r.expect(t, 0, []string{"***"}, nil)
		if strings.Contains(r.stdout+r.stderr, "s3cret") {
			t.Errorf("gocrawl %s shows a secret:\n%s%s", strings.Join(args[:2], " "), r.stdout, r.stderr)
		}
	}
	gocrawl(t, dir, nil, append([]string{"settings", "REDIS_URL"}, secrets...)...).expect(t, 0, []string{"redis://:***@127.0.0.1:6379/0\n"}, nil)
}

func TestSettingsJSON(t *testing.T) {
	r := gocrawl(t, t.TempDir(), nil, "settings", "--json", "-s", `THROTTLING_SCOPES={"a.com": {"delay": 2}}`)
	r.expect(t, 0, nil, nil)
	var entries []struct {
		Name   string `json:"name"`
		Value  any    `json:"value"`
		Source string `json:"source"`
		Doc    string `json:"doc"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil {
		t.Fatalf("settings --json: %v\n%s", err, r.stdout)
	}
	found := false
	for _, e := range entries {
		if e.Doc == "" {
			t.Errorf("%s has no doc", e.Name)
		}
		if e.Name == "THROTTLING_SCOPES" {
			found = true
			b, _ := json.Marshal(e.Value)
			if e.Source != "command line" || string(b) != `{"a.com":{"delay":2}}` {
				t.Errorf("THROTTLING_SCOPES = %s from %s", b, e.Source)
			}
		}
	}
	if !found || len(entries) < 50 {
		t.Errorf("%d entries, THROTTLING_SCOPES found: %v", len(entries), found)
	}
}

// site serves / -> /a, /b (404), /c.txt, and an external link; /a -> /.
func site(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Home</title></head><body><a href="/a">a</a> <a href="/b">b</a>
<a href="/c.txt">c</a> <a href="https://elsewhere.example/">x</a></body></html>`)
	})
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Page "A", with comma</title></head><body><a href="/">home</a></body></html>`)
	})
	mux.HandleFunc("/c.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "plain text")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type page struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Title  string `json:"title"`
	Depth  int    `json:"depth"`
}

func TestRunFollowExports(t *testing.T) {
	srv := site(t)
	dir := t.TempDir()
	crawl := func(extra ...string) result {
		args := append([]string{"run", "follow", "-a", "start_urls=" + srv.URL + "/", "-s", "LOG_LEVEL=WARNING"}, extra...)
		return gocrawl(t, dir, nil, args...)
	}
	want := map[string]page{
		srv.URL + "/":      {srv.URL + "/", 200, "Home", 0},
		srv.URL + "/a":     {srv.URL + "/a", 200, `Page "A", with comma`, 1},
		srv.URL + "/c.txt": {srv.URL + "/c.txt", 200, "", 1},
	}
	check := func(t *testing.T, got []page, times int) {
		t.Helper()
		count := map[string]int{}
		for _, p := range got {
			count[p.URL]++
			if p.URL == srv.URL+"/b" {
				continue // a 404: exported or not depending on the HTTP error middleware
			}
			if w, ok := want[p.URL]; !ok || w != p {
				t.Errorf("item %+v, want %+v", p, w)
			}
		}
		for u := range want {
			if count[u] != times {
				t.Errorf("%s exported %d times, want %d (items %+v)", u, count[u], times, got)
			}
		}
	}

	t.Run("jsonl, summary", func(t *testing.T) {
		r := crawl("-O", "out.jsonl")
		r.expect(t, 0, nil, []string{"--- follow: finished", "requests", "responses", "200: ", "items", "bytes", "ok responses/s", "completed/s"})
		check(t, readJSONL(t, filepath.Join(dir, "out.jsonl")), 1)
		// -o appends, -O overwrites.
		crawl("-o", "out.jsonl").expect(t, 0, nil, nil)
		check(t, readJSONL(t, filepath.Join(dir, "out.jsonl")), 2)
		crawl("-O", "out.jsonl").expect(t, 0, nil, nil)
		check(t, readJSONL(t, filepath.Join(dir, "out.jsonl")), 1)
	})
	t.Run("json", func(t *testing.T) {
		crawl("-O", "out.json").expect(t, 0, nil, nil)
		crawl("-o", "out.json").expect(t, 0, nil, nil)
		b, _ := os.ReadFile(filepath.Join(dir, "out.json"))
		var got []page
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("out.json is not a JSON array: %v\n%s", err, b)
		}
		check(t, got, 2)
	})
	t.Run("csv with -t and fields", func(t *testing.T) {
		crawl("-O", "out.data", "-t", "csv", "-s", "FEED_EXPORT_FIELDS=[title, url]").expect(t, 0, nil, nil)
		f, _ := os.Open(filepath.Join(dir, "out.data"))
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(recs[0], []string{"title", "url"}) {
			t.Fatalf("header %v", recs[0])
		}
		var got []page
		for _, r := range recs[1:] {
			p := want[r[1]]
			p.Title = r[0]
			got = append(got, p)
			if p.URL == "" {
				got[len(got)-1].URL = r[1]
			}
		}
		check(t, got, 1)
	})
	t.Run("FEEDS setting and max_depth", func(t *testing.T) {
		os.WriteFile(filepath.Join(dir, "gocrawl.yaml"), []byte("FEEDS:\n  feeds/pages.jsonl: {overwrite: true}\n"), 0o644)
		defer os.Remove(filepath.Join(dir, "gocrawl.yaml"))
		crawl("-a", "max_depth=0", "-a", "follow=a[href='/a']").expect(t, 0, nil, nil)
		got := readJSONL(t, filepath.Join(dir, "feeds", "pages.jsonl"))
		if len(got) != 2 || got[0].URL != srv.URL+"/" || got[1].URL != srv.URL+"/a" {
			t.Errorf("items %+v", got)
		}
	})
}

func TestRunUnreachableHostStillExitsZero(t *testing.T) {
	// A closed port: the download fails, the crawl ran, the exit status is 0.
	// (robots.txt is not obeyed: an unreachable robots.txt keeps the
	// requests waiting for ROBOTSTXT_UNREACHABLE_TIMEOUT.)
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	r := gocrawl(t, t.TempDir(), nil, "run", "follow", "-a", "start_urls="+addr+"/", "-s", "LOG_LEVEL=ERROR",
		"-s", "DOWNLOAD_TIMEOUT=5", "-s", "ROBOTSTXT_OBEY=false")
	r.expect(t, 0, nil, []string{"errors", "DownloadFailedError"})
}

func readJSONL(t *testing.T, path string) []page {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []page
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var p page
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("%s: line %q: %v", path, l, err)
		}
		out = append(out, p)
	}
	return out
}

// TestNewProjectBuilds makes a project with gocrawl new, adds a spider of
// every template kind of templates/spider with genspider, and builds,
// vets, tests and runs the project offline: templates cannot rot, and a
// kind added to the directory is tried here without editing this test.
func TestNewProjectBuilds(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not installed")
	}
	dir := t.TempDir()
	r := gocrawl(t, dir, nil, "new", "mycrawler", "--spider", "shop_items", "--domain", "shop.example.com")
	r.expect(t, 0, []string{"Created mycrawler", `spider "shop_items" for shop.example.com`, "go run . run shop_items"}, nil)
	proj := filepath.Join(dir, "mycrawler")
	for _, f := range []string{"go.mod", "go.sum", "main.go", "spiders/spiders.go", "spiders/shop_items.go", "spiders/shop_items_test.go", "gocrawl.yaml"} {
		if _, err := os.Stat(filepath.Join(proj, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	gomod, _ := os.ReadFile(filepath.Join(proj, "go.mod"))
	for _, want := range []string{"replace github.com/gocrawl/gocrawl => ../", "\tgithub.com/PuerkitoBio/goquery v", "go mod edit -dropreplace"} {
		if !strings.Contains(string(gomod), want) {
			t.Errorf("go.mod lacks %q:\n%s", want, gomod)
		}
	}
	if strings.Contains(string(gomod), "goquery v1.14.0 // indirect") || regexp.MustCompile(`=> /`).MatchString(string(gomod)) {
		t.Errorf("go.mod lists goquery as indirect or replaces with an absolute path:\n%s", gomod)
	}
	yml, _ := os.ReadFile(filepath.Join(proj, "gocrawl.yaml"))
	if !strings.Contains(string(yml), "DOWNLOAD_DELAY: 1\n") || !strings.Contains(string(yml), "ROBOTSTXT_OBEY: true\n") {
		t.Errorf("gocrawl.yaml:\n%s", yml)
	}
	// One spider per template kind found in templates/spider.
	tmpls, err := filepath.Glob(filepath.Join("templates", "spider", "*.go.tmpl"))
	if err != nil || len(tmpls) == 0 {
		t.Fatalf("no spider templates: %v", err)
	}
	want := []string{"shop_items"}
	for _, p := range tmpls {
		kind := strings.TrimSuffix(filepath.Base(p), ".go.tmpl")
		name := "gen_" + kind
		gocrawl(t, filepath.Join(proj, "spiders"), nil, "genspider", name, "https://"+kind+".example.com/start/", "-t", kind).
			expect(t, 0, []string{"Created " + name + ".go: the " + kind + " spider"}, nil)
		want = append(want, name)
	}
	gocrawl(t, proj, nil, "genspider", "gen_basic", "x.example.com").expect(t, 2, nil, []string{"already exists"})
	gocrawl(t, proj, nil, "genspider", "other", "x.example.com", "-t", "nope").expect(t, 2, nil, []string{"-t nope: no such spider template; the kinds are basic"})
	gocrawl(t, dir, nil, "genspider", "other", "x.example.com").expect(t, 2, nil, []string{"not inside a Go module"})
	// The README's example program is type-checked with the project (go vet).
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	code, ok := firstGoBlock(string(readme))
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	os.MkdirAll(filepath.Join(proj, "readme"), 0o755)
	os.WriteFile(filepath.Join(proj, "readme", "main.go"), []byte(code), 0o644)
	// Offline: everything comes from the checkout and the module cache.
	// vet type-checks every package of the project, tests included.
	bin := filepath.Join(dir, "mycrawler-bin")
	for _, args := range [][]string{{"build", "-o", bin, "."}, {"vet", "./..."}, {"test", "./spiders"}} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v in the new project: %v\n%s", args, err, out)
		}
	}
	// The project's binary lists every spider (genspider's included,
	// without an edit of main.go) and reads its gocrawl.yaml.
	slices.Sort(want)
	out, err := exec.Command(bin, "list").Output()
	if err != nil || string(out) != strings.Join(want, "\n")+"\n" {
		t.Errorf("list: %q, %v; want %q", out, err, want)
	}
	cmd := exec.Command(bin, "settings", "DOWNLOAD_DELAY")
	cmd.Dir = proj
	if out, err := cmd.Output(); err != nil || string(out) != "1\n" {
		t.Errorf("settings DOWNLOAD_DELAY in the project: %q, %v", out, err)
	}
	// A second new into the same directory is refused.
	gocrawl(t, dir, nil, "new", "mycrawler").expect(t, 2, nil, []string{"already exists and is not empty"})
	gocrawl(t, dir, nil, "new", "other", "--spider", "Bad-Name").expect(t, 2, nil, []string{`spider name "Bad-Name"`})
}

// firstGoBlock returns the content of the first ```go fenced block of md.
func firstGoBlock(md string) (string, bool) {
	_, rest, ok := strings.Cut(md, "```go\n")
	if !ok {
		return "", false
	}
	code, _, ok := strings.Cut(rest, "```")
	return code, ok
}

// Every problem of one THROTTLING_SCOPES entry is reported at once, each
// with the file and line of its key, and stops `settings` and `run` with
// exit status 2 before anything is fetched.
func TestScopeEntryProblemsAllReported(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "scopes.yaml"), []byte("THROTTLING_SCOPES:\n  api:\n    concurency: 3\n    delay: -1\n    jitter: 7\n"), 0o644)
	want := []string{"gocrawl: 3 ",
		`scopes.yaml:3: invalid setting THROTTLING_SCOPES: scope "api": key "concurency": unknown key; did you mean "concurrency"?`,
		`scopes.yaml:4: invalid setting THROTTLING_SCOPES: scope "api": key "delay": -1 is negative`,
		`scopes.yaml:5: invalid setting THROTTLING_SCOPES: scope "api": key "jitter": 7 is above 1`}
	for _, args := range [][]string{
		{"settings", "--settings", "scopes.yaml"},
		{"run", "follow", "--settings", "scopes.yaml", "-a", "start_urls=http://127.0.0.1:1/"},
	} {
		t.Run(args[0], func(t *testing.T) {
			gocrawl(t, dir, nil, args...).expect(t, 2, nil, want)
		})
	}
}
