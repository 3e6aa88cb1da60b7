package scheduler_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/settings"
)

func TestSpillSettingsChecked(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root writes in a 0500 folder: /proc is a folder nobody can
		// create folders in.
		readOnly = "/proc"
	}
	for _, tc := range []struct {
		name      string
		overrides []string
		bad       string // the setting the error must name, "" = valid
		msg       string
	}{
		{"defaults", nil, "", ""},
		{"never spill", []string{"SCHEDULER_MEMORY_MAX_REQUESTS=0"}, "", ""},
		{"existing folder", []string{"SCHEDULER_SPILL_DIR=" + dir}, "", ""},
		{"negative limit", []string{"SCHEDULER_MEMORY_MAX_REQUESTS=-5"}, "SCHEDULER_MEMORY_MAX_REQUESTS", ""},
		{"not a number", []string{"SCHEDULER_MEMORY_MAX_REQUESTS=lots"}, "SCHEDULER_MEMORY_MAX_REQUESTS", ""},
		{"missing folder", []string{"SCHEDULER_SPILL_DIR=" + filepath.Join(dir, "nope")}, "SCHEDULER_SPILL_DIR", "create it"},
		{"a file", []string{"SCHEDULER_SPILL_DIR=" + file}, "SCHEDULER_SPILL_DIR", "is not a folder"},
		// The folder is unused when the queue never spills, or is kept
		// in JOBDIR or Redis.
		{"missing folder, never spill", []string{"SCHEDULER_SPILL_DIR=" + filepath.Join(dir, "nope"), "SCHEDULER_MEMORY_MAX_REQUESTS=0"}, "", ""},
		{"missing folder, JOBDIR", []string{"SCHEDULER_SPILL_DIR=" + filepath.Join(dir, "nope"), "JOBDIR=" + filepath.Join(dir, "job")}, "", ""},
		{"read-only folder", []string{"SCHEDULER_SPILL_DIR=" + readOnly}, "SCHEDULER_SPILL_DIR", "cannot create its temporary folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := settings.Load(settings.LoadOptions{NoFile: true, Overrides: tc.overrides})
			if err == nil {
				err = settings.Validate(s)
			}
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var se *settings.Error
			if !errors.As(err, &se) || se.Setting != tc.bad || !strings.Contains(err.Error(), "-s "+tc.bad) {
				t.Fatalf("error %v, want one naming %s and where it was set", err, tc.bad)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q does not say %q", err, tc.msg)
			}
		})
	}
}
