package pqueue

import (
	"fmt"
	"strings"

	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("pqueue", checkSettings) }

// checkSettings is the priority queue part of settings.Validate:
// SCHEDULER_PRIORITY_QUEUE must name a registered queue.
func checkSettings(s *settings.Settings) error {
	name := s.String("SCHEDULER_PRIORITY_QUEUE")
	if factories.Has(name) {
		return nil
	}
	return settings.Invalid(s, "SCHEDULER_PRIORITY_QUEUE",
		fmt.Sprintf("unknown priority queue %q (registered: %s)", name, strings.Join(factories.Names(), ", ")))
}
