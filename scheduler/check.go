package scheduler

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("scheduler", checkSettings) }

// checkSettings is the scheduler part of settings.Validate: SCHEDULER must
// name a registered scheduler, and SCHEDULER_SPILL_DIR, when set and used
// (the queue may spill, and neither JOBDIR nor REDIS_URL keeps it
// elsewhere), a folder the crawl can create its temporary folder in
// (checked before the crawl, not when the queue first spills, perhaps
// hours later).
func checkSettings(s *settings.Settings) error {
	var errs []error
	if name := s.String("SCHEDULER"); !factories.Has(name) {
		errs = append(errs, settings.Invalid(s, "SCHEDULER", fmt.Sprintf("unknown scheduler %q (registered: %s)", name, strings.Join(factories.Names(), ", "))))
	}
	dir := s.String("SCHEDULER_SPILL_DIR")
	used := s.Int("SCHEDULER_MEMORY_MAX_REQUESTS") > 0 && s.String("JOBDIR") == "" && s.String("REDIS_URL") == ""
	if dir != "" && used {
		if fi, err := os.Stat(dir); err != nil {
			errs = append(errs, settings.Invalid(s, "SCHEDULER_SPILL_DIR",
				fmt.Sprintf("the folder cannot be used (%v); create it, or leave the setting empty for the system's temporary folder", err)))
		} else if !fi.IsDir() {
			errs = append(errs, settings.Invalid(s, "SCHEDULER_SPILL_DIR", fmt.Sprintf("%s is not a folder", dir)))
		} else if probe, err := os.MkdirTemp(dir, ".gocrawl-check-*"); err != nil {
			errs = append(errs, settings.Invalid(s, "SCHEDULER_SPILL_DIR",
				fmt.Sprintf("the crawl cannot create its temporary folder there (%v)", err)))
		} else {
			_ = os.Remove(probe)
		}
	}
	return errors.Join(errs...)
}
