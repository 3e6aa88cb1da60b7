// Package atomicfile writes a file so that a reader sees either the old
// content or the whole new one, never a part: the content goes to a
// temporary file in the same folder, which is synced and then renamed over
// the target. A failure removes the temporary file and leaves the target
// as it was.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write creates path's folder when missing and replaces path with what
// fill writes, with the permissions perm. The temporary file is synced
// before the rename, so after a crash the target holds the old content or
// the new, whole.
func Write(path string, perm os.FileMode, fill func(f *os.File) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		err = fill(f)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
