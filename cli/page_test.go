package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/gocrawl/gocrawl/devtools/demosite"
	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// pageSite serves the pages fetch, view, parse and shell are tried on:
// / (HTML), /moved (301 to /), /gone (410), /secret (disallowed by
// robots.txt), /plain (text).
func pageSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /secret\n")
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-Seen-Agent", r.UserAgent())
		fmt.Fprint(w, `<html><head><title>Home</title><link rel="stylesheet" href="style.css"></head><body>
<h1>Welcome <small>home</small></h1>
<div class="quote"><span class="text">First</span><a class="tag" href="/tag/a">a</a></div>
<div class="quote"><span class="text">Second</span><a class="tag" href="tag/b">b</a></div>
<ul><li class="next"><a href="/page/2/">Next</a></li></ul></body></html>`)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusMovedPermanently) })
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, "<p>gone for good</p>")
	})
	mux.HandleFunc("/secret", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "just text")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetch(t *testing.T) {
	srv := pageSite(t)
	dir := t.TempDir()
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string
		notStdout      []string
	}{
		{"body", []string{"fetch", srv.URL + "/"}, 0, []string{"<h1>Welcome <small>home</small></h1>"}, nil, []string{"< 200"}},
		{"headers after a redirect", []string{"fetch", "--headers", srv.URL + "/moved"}, 0,
			[]string{"* redirected from " + srv.URL + "/moved", "> GET " + srv.URL + "/\n", "> User-Agent: gocrawl/", "< 200 OK", "< X-Seen-Agent: gocrawl/"},
			nil, []string{"<h1>"}},
		{"no redirect", []string{"fetch", "--headers", "--no-redirect", srv.URL + "/moved"}, 0,
			[]string{"< 301 Moved Permanently", "< Location: /"}, nil, nil},
		{"error status is shown", []string{"fetch", srv.URL + "/gone"}, 0, []string{"gone for good"}, nil, nil},
		{"robots.txt", []string{"fetch", srv.URL + "/secret"}, 1, nil, []string{"robots.txt disallows it; -s ROBOTSTXT_OBEY=false fetches anyway"}, nil},
		{"robots.txt off", []string{"fetch", "-s", "ROBOTSTXT_OBEY=false", srv.URL + "/secret"}, 0, []string{"secret"}, nil, nil},
		{"unreachable", []string{"fetch", "-s", "ROBOTSTXT_OBEY=false", "-s", "RETRY_ENABLED=false", "http://127.0.0.1:1/"}, 1, nil,
			[]string{"http://127.0.0.1:1/: DownloadFailedError"}, nil},
		{"bad URL", []string{"fetch", "example.com"}, 2, nil, []string{"give an absolute http(s) URL"}, nil},
		{"output file", []string{"fetch", srv.URL + "/plain", "-o", "plain.txt"}, 0, nil, nil, []string{"just text"}},
		{"unknown spider", []string{"fetch", "--spider", "nope", srv.URL + "/"}, 2, nil, []string{`unknown spider "nope"`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gocrawl(t, dir, nil, tt.args...)
			r.expect(t, tt.code, tt.stdout, tt.stderr)
			for _, s := range tt.notStdout {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, r.stdout)
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "plain.txt")); err != nil || string(b) != "just text" {
		t.Errorf("fetch -o: %q, %v", b, err)
	}
}

func TestView(t *testing.T) {
	srv := pageSite(t)
	dir := t.TempDir()
	// A "browser" that records what it was asked to open.
	opened := filepath.Join(dir, "opened")
	browser := filepath.Join(dir, "browser.sh")
	os.WriteFile(browser, []byte("#!/bin/sh\necho \"$1\" > "+opened+"\n"), 0o755)
	r := gocrawl(t, dir, []string{"BROWSER=/nonexistent/browser:" + browser}, "view", srv.URL+"/", "-o", "page.html")
	r.expect(t, 0, []string{filepath.Join(dir, "page.html")}, nil)
	b, err := os.ReadFile(filepath.Join(dir, "page.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `<head><base href="`+srv.URL+`/"><title>Home</title>`) {
		t.Errorf("saved page has no <base> right after <head>:\n%s", b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := os.ReadFile(opened)
		if strings.TrimSpace(string(got)) == filepath.Join(dir, "page.html") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("BROWSER was not run with the page: %q", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Without -o: a new temporary file, its path printed.
	r = gocrawl(t, dir, nil, "view", srv.URL+"/plain")
	r.expect(t, 0, []string{"gocrawl-view-", ".plain\n"}, nil)
	os.Remove(strings.TrimSpace(r.stdout))
}

// demoQuotes serves the offline quotes site, as the demo does.
func demoQuotes(t *testing.T) string {
	srv, err := simsite.Start(t.Context(), simsite.Config{Hosts: []simsite.HostConfig{{Name: "quotes", Seed: 1, Content: demosite.Quotes()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.URL("quotes")
}

func TestParse(t *testing.T) {
	base := demoQuotes(t)
	dir := t.TempDir()
	// The quotes spider on its front page: 10 quotes, the next page and
	// the author pages to follow.
	r := gocrawl(t, dir, nil, "parse", base+"/", "--spider", "quotes")
	r.expect(t, 0, []string{">>> depth 1: " + base + "/ (200), callback Parse", "# items (10)", `"author":"Albert Einstein"`,
		"GET " + base + "/page/2/  callback Parse", "callback ParseAuthor", "1 responses, 10 items"}, nil)
	// Another callback.
	r = gocrawl(t, dir, nil, "parse", base+"/author/Albert-Einstein/", "--spider", "quotes", "--callback", "ParseAuthor", "--json")
	r.expect(t, 0, nil, nil)
	var got struct {
		Depth    int              `json:"depth"`
		Callback string           `json:"callback"`
		Items    []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if got.Callback != "ParseAuthor" || len(got.Items) != 1 || got.Items[0]["name"] != "Albert Einstein" {
		t.Errorf("ParseAuthor: %+v", got)
	}
	// Depth 2 follows the requests of the first page and stops there.
	r = gocrawl(t, dir, nil, "parse", base+"/", "--spider", "quotes", "--depth", "2")
	r.expect(t, 0, []string{"(followed)", ">>> depth 2: " + base + "/page/2/ (200), callback Parse", ">>> depth 2: " + base + "/author/"}, nil)
	if strings.Contains(r.stdout, ">>> depth 3") {
		t.Errorf("went deeper than --depth 2:\n%s", r.stdout)
	}
	// follow needs no other argument: the URL is its start URL.
	r = gocrawl(t, dir, nil, "parse", base+"/", "--spider", "follow")
	r.expect(t, 0, []string{"# items (1)", `"title":"Quotes to Scrape"`, "GET " + base + "/page/2/"}, nil)
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"parse", base + "/"}, "parse needs --spider NAME"},
		{[]string{"parse", base + "/", "--spider", "quotes", "--callback", "Nope"}, `spider quotes has no callback method "Nope"`},
		{[]string{"parse", base + "/", "--spider", "quotes", "--depth", "0"}, "--depth 0"},
	} {
		gocrawl(t, dir, nil, bad.args...).expect(t, 2, nil, []string{bad.want})
	}
}

// terminal is the gocrawl binary running on a pseudo-terminal, as a user
// at a keyboard would run it.
type terminal struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startTerminal(t *testing.T, dir string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOCRAWL_") && !strings.HasPrefix(kv, "TERM=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TERM=xterm")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, pty: f, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		f.Close()
		<-term.done
	})
	return term
}

// expect waits until the output after mark contains want, and returns the
// new mark (where want ends).
func (term *terminal) expect(mark int, want string) int {
	term.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		term.mu.Lock()
		s := term.out.String()
		term.mu.Unlock()
		if i := strings.Index(s[mark:], want); i >= 0 {
			return mark + i + len(want)
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the terminal never showed %q; it shows:\n%s", want, s[mark:])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (term *terminal) typeKeys(keys string) {
	term.t.Helper()
	if _, err := io.WriteString(term.pty, keys); err != nil {
		term.t.Fatal(err)
	}
}

// TestShellOnATerminal drives `gocrawl shell` through a pseudo-terminal:
// selector commands, line editing, history recall within the session and
// across sessions, completion, Ctrl-C and Ctrl-D.
func TestShellOnATerminal(t *testing.T) {
	srv := pageSite(t)
	dir := t.TempDir()
	history := filepath.Join(dir, "history")
	term := startTerminal(t, dir, "shell", "--history", history, srv.URL+"/")
	m := term.expect(0, "200 OK  "+srv.URL+"/")
	m = term.expect(m, "gocrawl> ")
	term.typeKeys("css div.quote span.text\r")
	m = term.expect(m, "[0] First")
	m = term.expect(m, "[1] Second")
	m = term.expect(m, "gocrawl> ")
	// Line editing: type "links lix" , go left over the x, delete it,
	// go to the end of the line and finish the selector.
	term.typeKeys("links li.nexx")
	term.typeKeys("\x7f") // backspace
	term.typeKeys("t\x1b[D\x1b[C a\r")
	m = term.expect(m, "[0] "+srv.URL+"/page/2/")
	m = term.expect(m, "gocrawl> ")
	// Ctrl-A goes to the start of the line: "ss h1" becomes "css h1".
	term.typeKeys("ss h1\x01c\r")
	m = term.expect(m, "[0] Welcome home")
	m = term.expect(m, "gocrawl> ")
	// Up arrow twice recalls the links command.
	term.typeKeys("\x1b[A\x1b[A\r")
	m = term.expect(m, "[0] "+srv.URL+"/page/2/")
	m = term.expect(m, "gocrawl> ")
	// Tab completes a command name; ::attr() and a typo get answers.
	term.typeKeys("at\tdiv.quote a.tag href\r")
	m = term.expect(m, "[1] tag/b")
	term.typeKeys("css a.tag::attr(href)\r")
	m = term.expect(m, "[0] /tag/a")
	term.typeKeys("lniks\r")
	m = term.expect(m, `unknown command "lniks"; did you mean links?`)
	// Ctrl-C abandons the line being typed.
	term.typeKeys("css nothing-to-see\x03")
	m = term.expect(m, "gocrawl> ")
	term.typeKeys("fetch " + srv.URL + "/gone\r")
	m = term.expect(m, "410 Gone  "+srv.URL+"/gone")
	term.typeKeys("css h1\r")
	m = term.expect(m, "no element matches h1")
	term.typeKeys("fetch " + srv.URL + "/plain\r")
	m = term.expect(m, "200 OK  "+srv.URL+"/plain")
	term.typeKeys("css p\r")
	m = term.expect(m, "error: the response is not HTML (text/plain)")
	term.typeKeys("\x04") // Ctrl-D
	select {
	case <-term.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the shell did not end on Ctrl-D")
	}
	if err := term.cmd.Wait(); err != nil {
		t.Errorf("shell exit: %v", err)
	}
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"css div.quote span.text", "links li.next a", "css h1", "fetch " + srv.URL + "/gone"} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("history lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "nothing-to-see") {
		t.Errorf("a line abandoned with Ctrl-C is in the history:\n%s", b)
	}

	// A new session recalls the last session's commands.
	term = startTerminal(t, dir, "shell", "--history", history, srv.URL+"/")
	m = term.expect(0, "gocrawl> ")
	term.typeKeys("\x1b[A\x1b[A\x1b[A\r") // css h1, from the history file
	m = term.expect(m, "[0] Welcome home")
	term.typeKeys("exit\r")
	select {
	case <-term.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the shell did not end on exit")
	}
}
