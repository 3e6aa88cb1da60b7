package hostile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The job directory (queued requests with their
// Authorization headers and proxy passwords) and the HTTP cache
// (Set-Cookie values) are private to the user, whatever the umask; a
// metrics endpoint on every interface is pointed out.

func TestJobDirAndCacheArePrivate(t *testing.T) {
	srv := newServer(t, "", 0)
	dir := t.TempDir()
	// A pre-existing, world-readable JOBDIR is tightened too.
	if err := os.MkdirAll(filepath.Join(dir, "job"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := gocrawlIn(t, dir, time.Minute, nil, "run", "follow",
		"-a", "start_urls="+srv.URL+"/page/0?links=1_2",
		"-s", "JOBDIR=job", "-s", "HTTPCACHE_ENABLED=true", "-s", "HTTPCACHE_DIR=cache",
		"-s", "METRICS_ADDR=:0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	for _, root := range []string{"job", "cache"} {
		n := 0
		err := filepath.WalkDir(filepath.Join(dir, root), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			n++
			want := fs.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if st.Mode().Perm()&0o077 != 0 || st.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", strings.TrimPrefix(p, dir+"/"), st.Mode().Perm(), want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < 3 {
			t.Errorf("%s holds %d entries; was it written?", root, n)
		}
	}
	if !strings.Contains(r.stderr, "made it private") {
		t.Errorf("tightening the existing JOBDIR was not logged:\n%s", tail(r.stderr))
	}
	if !strings.Contains(r.stderr, "every network interface") {
		t.Errorf("METRICS_ADDR=:0 gave no warning:\n%s", tail(r.stderr))
	}
}
