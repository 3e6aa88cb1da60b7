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
// name a registered scheduler, and SCHEDULER_SPILL_DIR, when set, an
// existing folder (checked before the crawl, not when the queue first
// spills, perhaps hours later).
func checkSettings(s *settings.Settings) error {
	var errs []error
	if name := s.String("SCHEDULER"); !factories.Has(name) {
		errs = append(errs, settings.Invalid(s, "SCHEDULER", fmt.Sprintf("unknown scheduler %q (registered: %s)", name, strings.Join(factories.Names(), ", "))))
	}
	if dir := s.String("SCHEDULER_SPILL_DIR"); dir != "" && s.Int("SCHEDULER_MEMORY_MAX_REQUESTS") > 0 {
		if fi, err := os.Stat(dir); err != nil {
			errs = append(errs, settings.Invalid(s, "SCHEDULER_SPILL_DIR",
				fmt.Sprintf("the folder cannot be used (%v); create it, or leave the setting empty for the system's temporary folder", err)))
		} else if !fi.IsDir() {
			errs = append(errs, settings.Invalid(s, "SCHEDULER_SPILL_DIR", fmt.Sprintf("%s is not a folder", dir)))
		}
	}
	return errors.Join(errs...)
}
