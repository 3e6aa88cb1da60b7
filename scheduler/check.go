package scheduler

import (
	"fmt"
	"strings"

	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("scheduler", checkSettings) }

// checkSettings is the scheduler part of settings.Validate: SCHEDULER must
// name a registered scheduler.
func checkSettings(s *settings.Settings) error {
	name := s.String("SCHEDULER")
	if factories.Has(name) {
		return nil
	}
	return settings.Invalid(s, "SCHEDULER", fmt.Sprintf("unknown scheduler %q (registered: %s)", name, strings.Join(factories.Names(), ", ")))
}
