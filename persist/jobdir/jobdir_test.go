package jobdir

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func mustOpen(t *testing.T, dir, sp string, o Options) *Job {
	t.Helper()
	j, err := Open(dir, sp, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return j
}

func TestOpenCreatesThenResumes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run1")
	j := mustOpen(t, dir, "books", Options{})
	if j.Resumed() {
		t.Fatal("a new job reports Resumed")
	}
	m := j.Metadata()
	if m.Spider != "books" || m.Version != FormatVersion || m.Created.IsZero() {
		t.Fatalf("metadata = %+v", m)
	}
	if err := j.SaveStats(map[string]float64{"item_scraped_count": 42}); err != nil {
		t.Fatal(err)
	}
	if err := j.SaveFeedOffset("out.jsonl", 1234); err != nil {
		t.Fatal(err)
	}
	type scope struct{ Scope string }
	if err := j.SaveThrottling([]scope{{"a.test"}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	j = mustOpen(t, dir, "books", Options{})
	defer j.Close()
	if !j.Resumed() {
		t.Fatal("reopened job does not report Resumed")
	}
	if !j.Metadata().Created.Equal(m.Created) {
		t.Errorf("creation time changed: %v -> %v", m.Created, j.Metadata().Created)
	}
	st, err := j.LoadStats()
	if err != nil || st["item_scraped_count"] != 42 {
		t.Errorf("stats = %v, %v", st, err)
	}
	off, ok, err := j.FeedOffset("out.jsonl")
	if err != nil || !ok || off != 1234 {
		t.Errorf("feed offset = %d %v %v", off, ok, err)
	}
	if _, ok, _ := j.FeedOffset("other"); ok {
		t.Error("unknown feed has an offset")
	}
	offs, err := j.FeedOffsets()
	if err != nil || len(offs) != 1 || offs["out.jsonl"] != 1234 {
		t.Errorf("FeedOffsets = %v %v", offs, err)
	}
	var sc []scope
	if ok, err := j.LoadThrottling(&sc); err != nil || !ok || len(sc) != 1 || sc[0].Scope != "a.test" {
		t.Errorf("throttling = %v %v %v", sc, ok, err)
	}
}

func TestOpenBadState(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		spider  string
		kind    error
		mention []string
	}{
		{
			name:    "other spider",
			prepare: func(t *testing.T, dir string) { mustOpen(t, dir, "books", Options{}).Close() },
			spider:  "quotes",
			kind:    ErrOtherSpider,
			mention: []string{`"books"`, `"quotes"`, "--fresh"},
		},
		{
			name: "incompatible version",
			prepare: func(t *testing.T, dir string) {
				j := mustOpen(t, dir, "books", Options{})
				b, _ := json.Marshal(Metadata{Version: FormatVersion + 1, Spider: "books"})
				if err := j.DB().Set([]byte(PrefixMeta), b, pebble.Sync); err != nil {
					t.Fatal(err)
				}
				j.Close()
			},
			spider:  "books",
			kind:    ErrIncompatible,
			mention: []string{fmt.Sprintf("format %d", FormatVersion+1)},
		},
		{
			name: "garbage metadata",
			prepare: func(t *testing.T, dir string) {
				j := mustOpen(t, dir, "books", Options{})
				if err := j.DB().Set([]byte(PrefixMeta), []byte("{not json"), pebble.Sync); err != nil {
					t.Fatal(err)
				}
				j.Close()
			},
			spider:  "books",
			kind:    ErrCorrupt,
			mention: []string{"metadata"},
		},
		{
			name: "data without metadata",
			prepare: func(t *testing.T, dir string) {
				j := mustOpen(t, dir, "books", Options{})
				db := j.DB()
				if err := db.Delete([]byte(PrefixMeta), pebble.Sync); err != nil {
					t.Fatal(err)
				}
				if err := db.Set([]byte(PrefixQueue+"x"), []byte("y"), pebble.Sync); err != nil {
					t.Fatal(err)
				}
				j.Close()
			},
			spider:  "books",
			kind:    ErrCorrupt,
			mention: []string{"no job metadata"},
		},
		{
			name: "not a database",
			prepare: func(t *testing.T, dir string) {
				state := filepath.Join(dir, stateDirName)
				if err := os.MkdirAll(state, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(state, "CURRENT"), []byte("garbage\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			spider:  "books",
			kind:    ErrCorrupt,
			mention: []string{"does not open"},
		},
		{
			name: "damaged manifest",
			prepare: func(t *testing.T, dir string) {
				mustOpen(t, dir, "books", Options{}).Close()
				ms, _ := filepath.Glob(filepath.Join(dir, stateDirName, "MANIFEST-*"))
				if len(ms) == 0 {
					t.Fatal("no MANIFEST file")
				}
				for _, m := range ms {
					if err := os.WriteFile(m, []byte(strings.Repeat("\xff", 300)), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			},
			spider:  "books",
			kind:    ErrCorrupt,
			mention: []string{"does not open"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.prepare(t, dir)
			j, err := Open(dir, tc.spider, Options{})
			if err == nil {
				j.Close()
				t.Fatal("Open succeeded on a bad job directory")
			}
			if !errors.Is(err, tc.kind) || !errors.Is(err, ErrBadState) {
				t.Fatalf("err = %v, want kind %v and ErrBadState", err, tc.kind)
			}
			for _, s := range append(tc.mention, dir) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not mention %q", err, s)
				}
			}
			// The job is left alone, and Reset starts over deliberately.
			j, err = Open(dir, tc.spider, Options{Reset: true})
			if err != nil {
				t.Fatalf("Open with Reset: %v", err)
			}
			defer j.Close()
			if j.Resumed() || j.Metadata().Spider != tc.spider {
				t.Fatalf("after Reset: resumed=%v meta=%+v", j.Resumed(), j.Metadata())
			}
		})
	}
}

func TestResetDropsState(t *testing.T) {
	dir := t.TempDir()
	j := mustOpen(t, dir, "books", Options{})
	if err := j.SaveStats(map[string]float64{"x": 1}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j = mustOpen(t, dir, "books", Options{Reset: true})
	defer j.Close()
	if st, _ := j.LoadStats(); st != nil {
		t.Fatalf("stats survived a reset: %v", st)
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, "", Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "no job here") {
		t.Fatalf("read-only open of an empty folder: %v", err)
	}
	j := mustOpen(t, dir, "books", Options{})
	j.SaveStats(map[string]float64{"x": 1})
	j.Close()
	j = mustOpen(t, dir, "", Options{ReadOnly: true})
	defer j.Close()
	if j.Metadata().Spider != "books" {
		t.Fatalf("meta = %+v", j.Metadata())
	}
	if err := j.SaveStats(nil); err == nil {
		t.Fatal("write on a read-only job succeeded")
	}
}

func TestSecondOpenInProcessIsLocked(t *testing.T) {
	dir := t.TempDir()
	j := mustOpen(t, dir, "books", Options{})
	_, err := Open(dir, "books", Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("message does not name the holder: %v", err)
	}
	j.Close()
	mustOpen(t, dir, "books", Options{}).Close()
}

const holdEnv = "GOCRAWL_JOBDIR_TEST_HOLD"

// TestMain lets the test binary act as a second process holding a job.
func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		j, err := Open(dir, "books", Options{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("holding")
		bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
		j.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTwoProcessesOnOneJob(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "holding\n" {
		t.Fatalf("child said %q", line)
	}
	_, err = Open(dir, "books", Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another gocrawl process") {
		t.Fatalf("Open while another process holds the job: %v", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Errorf("message does not name the other process: %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	mustOpen(t, dir, "books", Options{}).Close()
}

func TestResumeOffset(t *testing.T) {
	dir := t.TempDir()
	feedPath := filepath.Join(dir, "items.jsonl")
	j := mustOpen(t, filepath.Join(dir, "job"), "books", Options{})
	defer j.Close()
	if _, ok, err := j.ResumeOffset(feedPath); ok || err != nil {
		t.Fatalf("no saved offset: ok=%v err=%v", ok, err)
	}
	content := "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"
	if err := os.WriteFile(feedPath, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		saved int64
		file  string
		want  int64
	}{
		{"file longer than saved: cut back", 16, content, 16},
		{"file equal", int64(len(content)), content, int64(len(content))},
		{"file shorter (power failure): last complete line", 24, "{\"a\":1}\n{\"a\":2}\n{\"a", 16},
		{"file shorter, no complete line", 24, "{\"a", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(feedPath, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := j.SaveFeedOffset(feedPath, tc.saved); err != nil {
				t.Fatal(err)
			}
			got, ok, err := j.ResumeOffset(feedPath)
			if err != nil || !ok || got != tc.want {
				t.Fatalf("ResumeOffset = %d %v %v, want %d", got, ok, err, tc.want)
			}
		})
	}
}
