package jobtest

import (
	"bytes"
	"context"
	"database/sql"
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

// TestKillAndResumeIntoSinks kills a crawl with JOBDIR that writes its
// items to a database table (and to the jsonl file, a second feed) with
// SIGKILL at random moments, resumes it each time, then lets it finish:
// every page has exactly one row, keyed by its URL. The table's key makes
// a second row for a page impossible, so what this checks is that no item
// of an acknowledged request was lost: a batch is committed before its
// requests count as done.
func TestKillAndResumeIntoSinks(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real crawls; skipped with -short")
	}
	for _, tc := range []struct {
		name string
		// open returns the feed URI of a new database (the table is
		// named pages, keyed by url) and what reads the url of each of
		// its rows.
		open func(t *testing.T, dir string) (uri string, urls func() []string)
	}{
		{"PostgreSQL", func(t *testing.T, dir string) (string, func() []string) {
			url := pgtest.Start(t).CreateDB(t, "crawl")
			return url + "?table=pages&key=url", func() []string {
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
				return urls
			}
		}},
		{"SQLite", func(t *testing.T, dir string) (string, func() []string) {
			path := filepath.Join(dir, "items.db")
			return "sqlite://" + path + "?table=pages&key=url", func() []string {
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				rows, err := db.Query("SELECT url FROM pages")
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var urls []string
				for rows.Next() {
					var u string
					if err := rows.Scan(&u); err != nil {
						t.Fatal(err)
					}
					urls = append(urls, u)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				return urls
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const pages = 2000
			dir := t.TempDir()
			uri, read := tc.open(t, dir)
			s := newSite(t, pages)
			s.latency = 5 * time.Millisecond
			sink := []string{"-o", uri, "-s", "FEED_BATCH_ITEMS=50"}
			kills := killAndResume(t, s, dir, 3, sink...)
			if err := s.command(t, dir, sink...).Run(); exitCode(err) != 0 {
				t.Fatalf("final run: %v", err)
			}
			urls := read()
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
		})
	}
}

// killAndResume runs the crawl of s in dir up to rounds times, each run
// resuming the job, and kills each with SIGKILL after 100 to 500 more
// fetches. It returns how many runs were killed (fewer when a run
// finished first) and fails t if a run ended with an error.
func killAndResume(t *testing.T, s *site, dir string, rounds int, extra ...string) (kills int) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for range rounds {
		_, startTotal := s.snapshot()
		cmd := s.command(t, dir, extra...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		target := startTotal + 100 + rnd.IntN(400)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	wait:
		for {
			select {
			case err := <-done:
				if exitCode(err) != 0 {
					t.Fatalf("crawl run ended with %v", err)
				}
				return kills // the crawl finished before the kill
			case <-time.After(5 * time.Millisecond):
				if _, total := s.snapshot(); total >= target {
					cmd.Process.Signal(syscall.SIGKILL)
					<-done
					kills++
					break wait
				}
			}
		}
	}
	return kills
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
