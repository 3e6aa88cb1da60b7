package jobtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gocrawl/gocrawl/devtools/pgtest"
)

// TestKillAndResumeIntoPostgreSQL kills a crawl with JOBDIR that writes
// its items to a PostgreSQL table (and to the jsonl file, a second feed)
// with SIGKILL at random moments, resumes it each time, then lets it
// finish: every page has exactly one row, keyed by its URL.
func TestKillAndResumeIntoPostgreSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real crawls; skipped with -short")
	}
	const pages = 2000
	srv := pgtest.Start(t)
	url := srv.CreateDB(t, "crawl")
	dir := t.TempDir()
	s := newSite(t, pages)
	s.latency = 5 * time.Millisecond
	sink := []string{"-o", url + "?table=pages&key=url", "-s", "FEED_BATCH_ITEMS=50"}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	kills := 0
	for range 3 {
		_, startTotal := s.snapshot()
		cmd := s.command(t, dir, sink...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		target := startTotal + 100 + rnd.IntN(400)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		killed := false
	wait:
		for {
			select {
			case err := <-done:
				if exitCode(err) != 0 {
					t.Fatalf("crawl run ended with %v", err)
				}
				break wait
			case <-time.After(5 * time.Millisecond):
				if _, total := s.snapshot(); total >= target {
					cmd.Process.Signal(syscall.SIGKILL)
					<-done
					killed, kills = true, kills+1
					break wait
				}
			}
		}
		if !killed {
			break
		}
	}
	if err := s.command(t, dir, sink...).Run(); exitCode(err) != 0 {
		t.Fatalf("final run: %v", err)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SELECT url FROM pages")
	if err != nil {
		t.Fatal(err)
	}
	urls, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, u := range urls {
		seen[u]++
	}
	_, total := s.snapshot()
	t.Logf("%d kills, %d fetches for %d pages, %d rows", kills, total, pages, len(urls))
	for i := range pages {
		if n := seen[fmt.Sprintf("/p/%d", i)]; n != 1 {
			t.Errorf("page %d has %d rows, want exactly 1", i, n)
		}
	}
	if len(urls) != pages {
		t.Errorf("%d rows for %d pages", len(urls), pages)
	}
}

// TestBadSinkExits2 checks that a sink that cannot be used stops the
// command line before the first request, with exit status 2 and a message
// that names the problem without the password.
func TestBadSinkExits2(t *testing.T) {
	dir := t.TempDir()
	s := newSite(t, 10)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unreachable server", []string{"-o", "postgresql://crawler:hunter2@127.0.0.1:1/crawl?table=items"}, "cannot connect to PostgreSQL"},
		{"bad URI", []string{"-o", "postgresql://crawler:hunter2@127.0.0.1:port/crawl"}, "not a valid URI"},
		{"bad parameter", []string{"-o", "sqlite://" + filepath.Join(dir, "x.db") + "?colour=red"}, `unknown parameter "colour"`},
		{"format", []string{"-t", "csv", "-o", "sqlite://" + filepath.Join(dir, "x.db")}, "remove the format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := s.command(t, dir, tc.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if exitCode(err) != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, want 2 and a message saying %q:\n%s", exitCode(err), tc.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "hunter2") {
				t.Errorf("the message shows the password:\n%s", stderr.String())
			}
		})
	}
	if hits, _ := s.snapshot(); len(hits) != 0 {
		t.Fatal("a refused sink let the crawl fetch pages")
	}
}
