package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarcCommands: a crawl archived with WARC_DIR, looked at with `warc
// ls` and `warc get`, replayed by `run` and `parse --replay` without the
// site; a damaged archive is refused with exit status 2, naming the file
// and the offset.
func TestWarcCommands(t *testing.T) {
	srv := site(t)
	dir := t.TempDir()
	archive := filepath.Join(dir, "archive")
	start := srv.URL + "/"
	run := func(extra ...string) result {
		args := append([]string{"run", "follow", "-a", "start_urls=" + start, "-s", "LOG_LEVEL=WARNING", "-s", "ROBOTSTXT_OBEY=false"}, extra...)
		return gocrawl(t, dir, nil, args...)
	}
	run("-s", "WARC_DIR="+archive, "-o", "live.jsonl").expect(t, 0, nil, nil)
	files, _ := filepath.Glob(filepath.Join(archive, "follow-*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("archive files %v", files)
	}
	if _, err := os.Stat(strings.TrimSuffix(files[0], ".warc.gz") + ".cdxj"); err != nil {
		t.Errorf("no CDXJ index beside the file: %v", err)
	}

	gocrawl(t, dir, nil, "warc", "ls", files[0]).expect(t, 0,
		[]string{"OFFSET", "warcinfo", "request", "response  200", start + "a", "response  404"}, nil)
	gocrawl(t, dir, nil, "warc", "get", archive, start+"a", "--headers").expect(t, 0,
		[]string{"HTTP/1.1 200 OK", "Content-Type: text/html", `<title>Page "A", with comma</title>`}, nil)
	gocrawl(t, dir, nil, "warc", "get", files[0], start+"nothing").expect(t, 1, nil, []string{"not in the archive", start + "nothing"})

	// The replay, with the site gone.
	srv.Close()
	run("-s", "WARC_REPLAY="+archive, "-o", "replay.jsonl").expect(t, 0, nil, nil)
	live, replayed := readJSONL(t, filepath.Join(dir, "live.jsonl")), readJSONL(t, filepath.Join(dir, "replay.jsonl"))
	if len(live) < 3 || len(live) != len(replayed) {
		t.Errorf("live crawl %d items, replay %d", len(live), len(replayed))
	}
	gocrawl(t, dir, nil, "parse", start+"a", "--spider", "follow", "--replay", archive, "-s", "ROBOTSTXT_OBEY=false").
		expect(t, 0, []string{`Page \"A\", with comma`}, nil)
	r := gocrawl(t, dir, nil, "run", "follow", "-a", "start_urls="+start+"missing", "-s", "ROBOTSTXT_OBEY=false", "-s", "WARC_REPLAY="+archive)
	r.expect(t, 0, nil, []string{"the archive does not hold this URL", start + "missing"})

	// A damaged archive.
	b, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], b[:len(b)-5], 0o644)
	r = run("-s", "WARC_REPLAY="+archive)
	r.expect(t, 2, nil, []string{files[0], "offset "})
	gocrawl(t, dir, nil, "warc", "ls", files[0]).expect(t, 2, []string{"warcinfo"}, []string{files[0], "offset "})

	// A bad setting.
	run("-s", "WARC_DIR="+archive, "-s", "WARC_DEDUP=sometimes").expect(t, 2, nil, []string{"WARC_DEDUP", `"sometimes" is not a deduplication mode`})
}
