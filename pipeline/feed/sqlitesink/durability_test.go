package sqlitesink

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
)

// The connection the sink writes with commits in WAL mode and fsyncs the
// log at every commit (synchronous = FULL, 2): a stored batch survives a
// power loss, as the JOBDIR acknowledgement that follows it assumes.
func TestCommitsAreSynchronous(t *testing.T) {
	u, err := url.Parse("sqlite://" + filepath.Join(t.TempDir(), "items.db"))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := Open(u)
	if err != nil {
		t.Fatal(err)
	}
	s := fs.(*Sink)
	defer s.Close()
	ctx := context.Background()
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	for pragma, want := range map[string]string{"synchronous": "2", "journal_mode": "wal"} {
		var got string
		if err := s.db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}
