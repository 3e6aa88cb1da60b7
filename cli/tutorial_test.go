package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A tutorial step: a shell block to run, or a file to write. The markdown
// says how with HTML comments before a block:
//
//	<!-- run: checkout -->     run the block from the gocrawl checkout
//	<!-- run: background -->  start it and go on (a server), stopped at the end
//	<!-- run: skip -->         do not run it (needs the internet)
//	<!-- run: timeout 300 --> give it 300 s instead of 120
//	<!-- file: PATH -->        the next code block is the content of PATH
//
// and after a block, what its output must contain:
//
//	<!-- output: TEXT -->
//
// ```text blocks are shown output, not run.
type tutorialStep struct {
	kind    string // "sh", "file"
	line    int    // of the block in the markdown
	body    string
	path    string // file
	mode    string // "", "checkout", "background", "skip"
	timeout time.Duration
	expect  []string
}

func parseTutorial(t *testing.T, md string) []tutorialStep {
	t.Helper()
	var steps []tutorialStep
	var mode, file string
	timeout := 120 * time.Second
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if c, ok := strings.CutPrefix(l, "<!--"); ok {
			c = strings.TrimSpace(strings.TrimSuffix(c, "-->"))
			key, val, _ := strings.Cut(c, ":")
			val = strings.TrimSpace(val)
			switch strings.TrimSpace(key) {
			case "run":
				if secs, ok := strings.CutPrefix(val, "timeout "); ok {
					n, err := strconv.Atoi(secs)
					if err != nil {
						t.Fatalf("tutorial line %d: %q", i+1, l)
					}
					timeout = time.Duration(n) * time.Second
				} else {
					mode = val
				}
			case "file":
				file = val
			case "output":
				if len(steps) == 0 || steps[len(steps)-1].kind != "sh" {
					t.Fatalf("tutorial line %d: output without a shell block before it", i+1)
				}
				steps[len(steps)-1].expect = append(steps[len(steps)-1].expect, val)
			default:
				t.Fatalf("tutorial line %d: unknown marker %q", i+1, l)
			}
			continue
		}
		lang, ok := strings.CutPrefix(l, "```")
		if !ok || lang == "" {
			continue
		}
		start := i + 1
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		text := strings.Join(body, "\n") + "\n"
		switch {
		case file != "":
			steps = append(steps, tutorialStep{kind: "file", line: start, path: file, body: text})
		case lang == "sh":
			steps = append(steps, tutorialStep{kind: "sh", line: start, body: text, mode: mode, timeout: timeout})
		case lang == "text":
		default:
			t.Fatalf("tutorial line %d: a %s block with no file marker", start, lang)
		}
		mode, file, timeout = "", "", 120*time.Second
	}
	return steps
}

// freePorts returns n consecutive free ports on 127.0.0.1 (free when
// checked).
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ok := true
		for p := base; p < base+n && ok; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

// TestTutorial runs every command of docs/tutorial.md, in order, in a
// fresh directory against the local quotes site (the tutorial's ports
// 8080 and 8081 replaced by free ones), with the gocrawl the tutorial
// installs first on PATH. The project it creates is built offline.
func TestTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("the tutorial builds a Go project: skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not installed")
	}
	md, err := os.ReadFile(filepath.Join("..", "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := parseTutorial(t, string(md))
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	root, bin := t.TempDir(), t.TempDir()
	port := freePorts(t, 2)
	subst := strings.NewReplacer("8080", strconv.Itoa(port), "8081", strconv.Itoa(port+1))
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOCRAWL_") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "GOBIN=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+filepath.Dir(goTool)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOBIN="+bin, "GOPROXY=off", "GOCRAWL_LOG_FORMAT=console")
	cwd := root
	ran := 0
	for _, st := range steps {
		switch {
		case st.kind == "file":
			p := filepath.Join(root, filepath.FromSlash(st.path))
			if err := os.WriteFile(p, []byte(subst.Replace(st.body)), 0o644); err != nil {
				t.Fatalf("tutorial line %d: writing %s: %v", st.line, st.path, err)
			}
			continue
		case st.mode == "skip":
			continue
		case st.mode == "background":
			startBackground(t, root, env, subst.Replace(st.body), st.line)
			continue
		}
		dir := cwd
		if st.mode == "checkout" {
			dir = checkout
		}
		out, newCwd := runTutorialBlock(t, dir, env, subst.Replace(st.body), st)
		if st.mode != "checkout" {
			cwd = newCwd
		}
		for _, want := range st.expect {
			if !strings.Contains(out, subst.Replace(want)) {
				t.Fatalf("tutorial line %d: the output lacks %q:\n%s", st.line, subst.Replace(want), out)
			}
		}
		ran++
	}
	if ran < 10 {
		t.Errorf("only %d shell blocks ran", ran)
	}
}

// runTutorialBlock runs body with bash in dir, stopping at the first
// failing command, and returns its output and the directory it ended in.
func runTutorialBlock(t *testing.T, dir string, env []string, body string, st tutorialStep) (string, string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "cwd")
	script := "set -euo pipefail\n" + body + "\npwd > " + strconv.Quote(state) + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), st.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("tutorial line %d: %v\n%s\noutput:\n%s", st.line, err, body, out.String())
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), strings.TrimSpace(string(b))
}

// startBackground starts a server command of the tutorial and waits for
// its first line of output; it is stopped when the test ends.
func startBackground(t *testing.T, dir string, env []string, body string, line int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+strings.TrimSpace(body))
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("tutorial line %d: %v", line, err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
		}
	}()
	select {
	case l, ok := <-first:
		if !ok {
			t.Fatalf("tutorial line %d: %s ended without output: %s", line, body, stderr.String())
		}
		t.Logf("background: %s", l)
	case <-time.After(60 * time.Second):
		t.Fatalf("tutorial line %d: %s printed nothing in 60 s: %s", line, body, stderr.String())
	}
}
