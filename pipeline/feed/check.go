package feed

import (
	"errors"
	"strings"

	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("feed", checkSettings) }

// checkSettings is the feed export part of settings.Validate: every FEEDS
// entry has known options of the right types (files are not opened here;
// the command line checks them before the first request).
func checkSettings(s *settings.Settings) error {
	_, err := FromSettings(s)
	if err == nil {
		return nil
	}
	var errs []error
	for _, line := range strings.Split(err.Error(), "\n") {
		// "FEEDS[path]: problem" -> "entry path: problem"
		if rest, ok := strings.CutPrefix(line, "FEEDS["); ok {
			if path, msg, ok := strings.Cut(rest, "]: "); ok {
				line = "entry " + path + ": " + msg
			}
		}
		errs = append(errs, settings.Invalid(s, "FEEDS", line))
	}
	return errors.Join(errs...)
}
