package throttling

import (
	"errors"
	"maps"
	"slices"
	"strings"

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
			for _, e := range settings.Errors(err) { // every problem of the entry
				errs = append(errs, configProblem(s, e))
			}
		}
	}
	return errors.Join(errs...)
}

// configProblem turns a *ConfigError into a settings problem naming where
// the value came from: for a key of a THROTTLING_SCOPES entry written in
// a YAML file, the key's own line ("gocrawl.yaml:14"), else the setting's
// origin.
func configProblem(s *settings.Settings, err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	if ce.Scope != "" {
		path := []string{ce.Scope}
		if ce.Key != "" {
			path = append(path, strings.Split(ce.Key, ".")...)
		}
		return settings.InvalidKey(s, ce.Setting, path, err)
	}
	return settings.InvalidErr(s, ce.Setting, err)
}
