package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "out.txt")
	if err := Write(path, 0o640, func(f *os.File) error { _, err := f.WriteString("new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new" {
		t.Fatalf("after a write: %q, %v", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode after a write: %v, %v; want 0640", fi.Mode(), err)
	}
	// A failing fill leaves the target as it was and no temporary file.
	boom := errors.New("boom")
	err := Write(path, 0o640, func(f *os.File) error { f.WriteString("partial"); return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the fill's", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("target changed by a failed write: %q", b)
	}
	if es, _ := os.ReadDir(filepath.Dir(path)); len(es) != 1 {
		t.Errorf("folder holds %d entries after a failed write, want only the target", len(es))
	}
}
