package cli

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/persist/jobdir"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

type namedSpider struct{ spider.Base }

func (namedSpider) Name() string { return "named" }

func (namedSpider) Parse(context.Context, *spider.Response, spider.Output) error { return nil }

// JOBDIR_SYNC_DELAY reaches the job the CLI opens: its default is
// jobdir.DefaultSyncDelay, and 0 syncs at once.
func TestOpenJobSyncDelay(t *testing.T) {
	for _, tt := range []struct {
		set  any
		want time.Duration
	}{{nil, jobdir.DefaultSyncDelay}, {0.0, 0}, {0.05, 50 * time.Millisecond}} {
		s := settings.New()
		if err := s.Set("JOBDIR", filepath.Join(t.TempDir(), "job"), settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
		if tt.set != nil {
			if err := s.Set("JOBDIR_SYNC_DELAY", tt.set, settings.SourceCommandLine, "test"); err != nil {
				t.Fatal(err)
			}
		}
		j, err := openJob(s, &namedSpider{}, false, nil, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if got := j.SyncDelay(); got != tt.want {
			t.Errorf("JOBDIR_SYNC_DELAY=%v: job's sync delay %v, want %v", tt.set, got, tt.want)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := settings.New().Set("JOBDIR_SYNC_DELAY", -1.0, settings.SourceCommandLine, "test"); err == nil {
		t.Error("a negative JOBDIR_SYNC_DELAY was accepted")
	}
}
