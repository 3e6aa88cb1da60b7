package throttling

import (
	"errors"
	"maps"
	"slices"

	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("throttling", checkSettings) }

// checkSettings is the throttling part of settings.Validate: what
// ReadConfig (and so New) would refuse, with every THROTTLING_SCOPES entry
// checked on its own so that all bad entries are listed at once.
func checkSettings(s *settings.Settings) error {
	global := s.Clone()
	if err := global.Set("THROTTLING_SCOPES", map[string]any{}, settings.SourceCommandLine, ""); err != nil {
		return err
	}
	var errs []error
	c, err := ReadConfig(global)
	if err != nil {
		errs = append(errs, configProblem(s, err))
		// Check the scopes against the defaults, so that their own
		// problems are still reported.
		if c, err = ReadConfig(settings.New()); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	raw := s.Map("THROTTLING_SCOPES")
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		if _, err := c.parseScope(name, raw[name]); err != nil {
			errs = append(errs, configProblem(s, err))
		}
	}
	return errors.Join(errs...)
}

// configProblem turns a *ConfigError into a settings problem naming where
// the setting's value came from.
func configProblem(s *settings.Settings, err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	return settings.InvalidErr(s, ce.Setting, err)
}
