package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A full disk under JOBDIR or under a feed stops the
// crawl cleanly (a clear error, exit status 1, the summary), and the job
// resumes once space is freed, losing nothing.

// tmpfs mounts a tmpfs of size bytes in a new folder, or skips the test
// when that is not allowed (not root, no mount permission).
func tmpfs(t *testing.T, size int64) (dir string, resize func(int64)) {
	t.Helper()
	dir = t.TempDir()
	mount := func(opts ...string) error {
		out, err := exec.Command("mount", append([]string{"-t", "tmpfs"}, append(opts, "tmpfs", dir)...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if err := mount("-o", "size="+strconv.FormatInt(size, 10)); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v", err)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir, func(n int64) {
		if err := mount("-o", "remount,size="+strconv.FormatInt(n, 10)); err != nil {
			t.Fatalf("remount: %v", err)
		}
	}
}

// feedURLs reads the url of every item of a jsonl feed.
func feedURLs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var it struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatalf("%s: bad line %q: %v", path, sc.Text(), err)
		}
		out = append(out, it.URL)
	}
	return out
}

func cleanFailure(t *testing.T, r run, wantReason string) {
	t.Helper()
	if r.code != 1 {
		t.Errorf("exit %d, want 1\n%s", r.code, tail(r.stderr))
	}
	for _, bad := range []string{"panic:", "goroutine "} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr holds %q:\n%s", bad, tail(r.stderr))
		}
	}
	if !strings.Contains(r.stderr, "no space left on device") {
		t.Errorf("the error does not say the disk is full:\n%s", tail(r.stderr))
	}
	if !strings.Contains(r.stderr, `"reason":"`+wantReason+`"`) {
		t.Errorf("the crawl did not end with reason %s:\n%s", wantReason, tail(r.stderr))
	}
	if r.stats == nil {
		t.Errorf("no stats were written")
	}
}

func TestFullDiskUnderJobDir(t *testing.T) {
	const pages = 6000
	disk, resize := tmpfs(t, 3<<20)
	srv := newServer(t, "", 0)
	dir := t.TempDir()
	start := fmt.Sprintf("%s/tree/0?n=%d&pad=300", srv.URL, pages)
	args := []string{"run", "follow", "-a", "start_urls=" + start, "-s", "ROBOTSTXT_OBEY=false",
		"-s", "JOBDIR=" + filepath.Join(disk, "job"), "-o", "items.jsonl",
		"-s", "CONCURRENT_REQUESTS=16", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=16"}
	r := gocrawlIn(t, dir, 2*time.Minute, nil, args...)
	cleanFailure(t, r, "jobdir_error")
	if !strings.Contains(r.stderr, "free some space and run the same command again") {
		t.Errorf("the error does not say how to resume:\n%s", tail(r.stderr))
	}
	first := len(feedURLs(t, filepath.Join(dir, "items.jsonl")))
	if first == 0 || first >= pages {
		t.Fatalf("the first run wrote %d items of %d: did the disk fill?", first, pages)
	}

	resize(256 << 20) // space freed
	r = gocrawlIn(t, dir, 2*time.Minute, nil, args...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, tail(r.stderr))
	}
	urls := feedURLs(t, filepath.Join(dir, "items.jsonl"))
	seen := map[string]bool{}
	for _, u := range urls {
		seen[u] = true
	}
	refetched := len(urls) - len(seen)
	t.Logf("first run: %d items; after the resume: %d items, %d distinct pages, %d fetched again", first, len(urls), len(seen), refetched)
	if len(seen) != pages {
		t.Errorf("%d distinct pages in the feed, want %d: pages were lost", len(seen), pages)
	}
	if refetched > 64 {
		t.Errorf("%d pages fetched again, want at most a few times the concurrency", refetched)
	}
}

func TestFullDiskUnderFeed(t *testing.T) {
	const pages = 4000
	disk, _ := tmpfs(t, 256<<10)
	srv := newServer(t, "", 0)
	start := fmt.Sprintf("%s/tree/0?n=%d&pad=300", srv.URL, pages)
	r := gocrawl(t, 2*time.Minute, "run", "follow", "-a", "start_urls="+start, "-s", "ROBOTSTXT_OBEY=false",
		"-o", filepath.Join(disk, "items.jsonl"))
	cleanFailure(t, r, "feed_error")
	if got := r.stats["downloader/request_count"]; got >= pages/2 {
		t.Errorf("%v requests were sent after the feed could not be written (of %d pages)", got, pages)
	}
}

// TestFeedOnDevFull needs no root: /dev/full is a stream whose writes fail.
func TestFeedOnDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	const pages = 4000
	srv := newServer(t, "", 0)
	start := fmt.Sprintf("%s/tree/0?n=%d&pad=300", srv.URL, pages)
	r := gocrawl(t, 2*time.Minute, "run", "follow", "-a", "start_urls="+start, "-s", "ROBOTSTXT_OBEY=false",
		"-o", "/dev/full", "-t", "jsonl")
	cleanFailure(t, r, "feed_error")
	if got := r.stats["downloader/request_count"]; got >= pages/2 {
		t.Errorf("%v requests were sent after the feed could not be written (of %d pages)", got, pages)
	}
}
