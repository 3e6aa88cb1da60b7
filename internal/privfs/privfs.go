// Package privfs keeps what gocrawl stores on disk private to the user
// running it: job directories hold queued requests with their
// Authorization headers and proxy passwords, and the HTTP cache holds
// Set-Cookie values. Folders are created 0700 and files 0600, whatever
// the umask.
package privfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Permissions of what gocrawl creates.
const (
	DirPerm  fs.FileMode = 0o700
	FilePerm fs.FileMode = 0o600
)

// MkdirAll creates dir (and its parents) 0700. When dir already exists
// with group or other permissions, they are removed and tightened reports
// true, so the caller can say so.
func MkdirAll(dir string) (tightened bool, err error) {
	st, err := os.Stat(dir)
	switch {
	case err == nil:
		if !st.IsDir() {
			return false, fmt.Errorf("%s is not a directory", dir)
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(dir, st.Mode().Perm()&^0o077); err != nil {
				return false, err
			}
			return true, nil
		}
		return false, nil
	case os.IsNotExist(err):
		if err := os.MkdirAll(dir, DirPerm); err != nil {
			return false, err
		}
		return false, os.Chmod(dir, DirPerm) // against a umask that removes owner bits
	}
	return false, err
}

// FS wraps a Pebble file system (nil: the operating system's) so that the
// files and folders Pebble creates are private. Files that already exist
// with wider permissions are tightened when Pebble opens them for writing.
func FS(inner vfs.FS) vfs.FS {
	if inner == nil {
		inner = vfs.Default
	}
	onDisk := false
	for f := inner; f != nil; f = f.Unwrap() {
		if f == vfs.Default {
			onDisk = true
			break
		}
	}
	return privateFS{FS: inner, onDisk: onDisk}
}

// privateFS chmods what it creates when its paths are the operating
// system's (not for in-memory file systems in tests).
type privateFS struct {
	vfs.FS
	onDisk bool
}

func (p privateFS) chmod(name string, perm fs.FileMode) {
	if !p.onDisk {
		return
	}
	if st, err := os.Stat(name); err == nil && st.Mode().Perm() != perm {
		_ = os.Chmod(name, perm)
	}
}

func (p privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	if err == nil {
		p.chmod(name, FilePerm)
	}
	return f, err
}

func (p privateFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, category, opts...)
	if err == nil {
		p.chmod(name, FilePerm)
	}
	return f, err
}

func (p privateFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, category)
	if err == nil {
		p.chmod(newname, FilePerm)
	}
	return f, err
}

func (p privateFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := p.FS.MkdirAll(dir, DirPerm); err != nil {
		return err
	}
	p.chmod(dir, DirPerm)
	return nil
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err == nil {
		p.chmod(name, FilePerm)
	}
	return c, err
}

func (p privateFS) Unwrap() vfs.FS { return p.FS }
