package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Continuing an existing feed reads only its ends, and
// a feed path that is not a regular file is a stream (or refused, exit 2,
// when it cannot be one).

// bigFeed writes a 512 MiB sparse feed: a valid start, zeros (a hole), and
// a newline at the end.
func bigFeed(t *testing.T, path, head string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(head)
	if _, err := f.WriteAt([]byte("\n"), 512<<20); err != nil {
		t.Skipf("cannot write a sparse file here: %v", err)
	}
}

func TestAppendToAHugeFeedCostsNothing(t *testing.T) {
	srv := newServer(t, "", 0)
	base := baselineRSS(t, srv)
	for _, tt := range []struct{ name, file, head, flag string }{
		{"-o jsonl", "items.jsonl", "", "-o"},
		{"-o csv", "items.csv", "url,status,title,depth\n", "-o"},
		{"-O jsonl", "items.jsonl", "", "-O"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			bigFeed(t, filepath.Join(dir, tt.file), tt.head)
			r := gocrawlIn(t, dir, time.Minute, nil, "run", "follow", "-a", "start_urls="+srv.URL+"/page/0", tt.flag, tt.file)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
			}
			t.Logf("%s onto a 512 MiB feed: peak RSS %s (baseline %s)", tt.name, mb(r.maxRSS), mb(base))
			if r.maxRSS > base+16*mib {
				t.Errorf("peak RSS %s, baseline %s: the existing feed was read", mb(r.maxRSS), mb(base))
			}
		})
	}
}

func TestFeedToStreams(t *testing.T) {
	srv := newServer(t, "", 0)
	r := gocrawl(t, time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/page/0", "-o", "/dev/null", "-t", "json")
	if r.code != 0 {
		t.Fatalf("-o /dev/null: exit %d\n%s", r.code, tail(r.stderr))
	}
	// A FIFO nobody reads: refused at once, not a hang.
	dir := t.TempDir()
	fifo := filepath.Join(dir, "items.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	r = gocrawl(t, time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/page/0", "-o", fifo)
	if r.code != 2 || !strings.Contains(r.stderr, "no process is reading") {
		t.Fatalf("FIFO without a reader: exit %d\n%s", r.code, tail(r.stderr))
	}
	// With a reader, the items stream through it.
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the crawl opens it, ends at its close
		got <- string(b)
	}()
	time.Sleep(100 * time.Millisecond)
	r = gocrawl(t, time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/page/0?links=1", "-o", fifo)
	if r.code != 0 {
		t.Fatalf("FIFO with a reader: exit %d\n%s", r.code, tail(r.stderr))
	}
	select {
	case s := <-got:
		if strings.Count(s, "\n") != 2 {
			t.Errorf("the reader got %q, want 2 items", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the FIFO's reader saw no end")
	}
}
