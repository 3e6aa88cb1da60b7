package hostile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/persist/warc"
)

// TestFullDiskUnderWarc: a full disk under WARC_DIR stops the crawl
// cleanly, as a full feed does (a clear error, exit status 1, the
// summary); once space is freed the job resumes, the file the first run
// left open is repaired, and every page ends up archived.
func TestFullDiskUnderWarc(t *testing.T) {
	const pages = 3000
	disk, resize := tmpfs(t, 512<<10)
	srv := newServer(t, "", 0)
	dir := t.TempDir()
	archive := filepath.Join(disk, "warc")
	start := fmt.Sprintf("%s/tree/0?n=%d&pad=300", srv.URL, pages)
	args := []string{"run", "follow", "-a", "start_urls=" + start, "-s", "ROBOTSTXT_OBEY=false",
		"-s", "WARC_DIR=" + archive, "-s", "JOBDIR=" + filepath.Join(dir, "job")}
	r := gocrawlIn(t, dir, 2*time.Minute, nil, args...)
	cleanFailure(t, r, "warc_error")
	if got := r.stats["downloader/request_count"]; got >= pages/2 {
		t.Errorf("%v requests were sent after the archive could not be written (of %d pages)", got, pages)
	}

	resize(256 << 20) // space freed
	r = gocrawlIn(t, dir, 2*time.Minute, nil, args...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, tail(r.stderr))
	}
	if !strings.Contains(r.stderr, "repaired") {
		t.Errorf("the resume does not say it repaired the file left open:\n%s", tail(r.stderr))
	}
	files, err := warc.ListFiles(archive)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".open") {
			t.Errorf("%s is still open after the crawl", f)
		}
		if _, err := warc.Scan(f, func(rec *warc.Record, _ warc.Position) error {
			if rec.Type() == warc.TypeResponse || rec.Type() == warc.TypeRevisit {
				seen[rec.TargetURI()] = true
			}
			return nil
		}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if len(seen) != pages {
		t.Errorf("%d pages archived over both runs, want %d", len(seen), pages)
	}
}
