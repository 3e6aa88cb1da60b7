package pipeline

import (
	"github.com/gocrawl/gocrawl/internal/registry"
	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("pipeline", checkSettings) }

// checkSettings is the item pipeline part of settings.Validate: every
// ITEM_PIPELINES entry names a registered pipeline with an integer (or
// null) order.
func checkSettings(s *settings.Settings) error {
	if _, err := registry.Ordered(s, "ITEM_PIPELINES", "", factories.Has); err != nil {
		return settings.InvalidErr(s, "ITEM_PIPELINES", err)
	}
	return nil
}
