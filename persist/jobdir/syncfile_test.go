package jobdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSyncFileInPlace checks the record of JOBDIR/synced.json: written in
// place through one open file, read back as the last mark, including over
// a file left by an older gocrawl (compact JSON, renamed into place).
func TestSyncFileInPlace(t *testing.T) {
	dir := t.TempDir()
	legacy := `{"count":7,"time":"2026-11-30T10:00:00Z"}`
	if err := os.WriteFile(filepath.Join(dir, syncFile), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	if m, ok := readSyncFile(dir); !ok || m.Count != 7 {
		t.Fatalf("legacy file read as %+v %v", m, ok)
	}
	var f *os.File
	defer func() { f.Close() }()
	t0 := time.Date(2026, 12, 1, 13, 0, 0, 123456789, time.UTC)
	for _, c := range []uint64{8, 9, 1 << 60} {
		var err error
		if f, err = writeSyncFile(dir, f, SyncMark{Count: c, Time: t0.Add(time.Duration(c))}); err != nil {
			t.Fatal(err)
		}
		m, ok := readSyncFile(dir)
		if !ok || m.Count != c || !m.Time.Equal(t0.Add(time.Duration(c))) {
			t.Fatalf("after writing mark %d, read %+v %v", c, m, ok)
		}
	}
	st, err := os.Stat(filepath.Join(dir, syncFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != syncRecordLen || st.Mode().Perm() != 0o600 {
		t.Errorf("synced.json is %d bytes, mode %v; want %d bytes, 0600", st.Size(), st.Mode().Perm(), syncRecordLen)
	}
}
