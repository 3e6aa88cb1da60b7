package jobdir

import (
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestWALFSSyncs checks walFS on a file system that can lose what was not
// synced: a log's Sync leaves its data unsynced, walFS.sync and Close
// fsync it, and files other than logs keep their own syncs.
func TestWALFSSyncs(t *testing.T) {
	mem := vfs.NewCrashableMem()
	w := &walFS{FS: mem}
	if err := mem.MkdirAll("db", 0o700); err != nil {
		t.Fatal(err)
	}
	syncDir := func(name string) {
		t.Helper()
		d, err := mem.OpenDir(name)
		if err == nil {
			err = d.Sync()
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = d.Close()
	}
	syncDir("")
	create := func(name string) vfs.File {
		t.Helper()
		f, err := w.Create(name, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		syncDir("db")
		return f
	}
	write := func(f vfs.File, s string) {
		t.Helper()
		if _, err := f.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	// afterPowerFailure returns each file's content in a crash clone.
	afterPowerFailure := func(names ...string) []string {
		t.Helper()
		c := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		var out []string
		for _, n := range names {
			f, err := c.Open(n)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f)
			if err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			out = append(out, string(b))
		}
		return out
	}
	log1, log2, other := create("db/000001.log"), create("db/000002.log"), create("db/MANIFEST-000001")
	write(log1, "a")
	write(log2, "b")
	write(other, "m")
	for _, f := range []vfs.File{log1, log2, other} {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if got := afterPowerFailure("db/000001.log", "db/000002.log", "db/MANIFEST-000001"); got[0] != "" || got[1] != "" || got[2] != "m" {
		t.Fatalf("after the files' own Syncs: %q, want the logs empty (written out, not synced) and the manifest synced", got)
	}
	if err := w.sync(); err != nil {
		t.Fatal(err)
	}
	if got := afterPowerFailure("db/000001.log", "db/000002.log"); got[0] != "a" || got[1] != "b" {
		t.Fatalf("after walFS.sync: %q, want both logs synced", got)
	}
	write(log1, "c")
	if err := log1.Close(); err != nil {
		t.Fatal(err)
	}
	if got := afterPowerFailure("db/000001.log"); got[0] != "ac" {
		t.Fatalf("after Close: %q, want the closed log synced", got)
	}
	if len(w.files) != 1 {
		t.Fatalf("walFS tracks %d open logs, want 1", len(w.files))
	}
	write(log2, "d")
	if err := w.sync(); err != nil {
		t.Fatal(err)
	}
	if got := afterPowerFailure("db/000002.log"); got[0] != "bd" {
		t.Fatalf("after walFS.sync: %q", got)
	}
	if err := log2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
}
