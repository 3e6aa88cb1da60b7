package middleware

import (
	"errors"
	"strings"

	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/internal/registry"
	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("middleware", checkSettings) }

// checkSettings is the middleware part of settings.Validate: the
// DOWNLOADER_MIDDLEWARES and SPIDER_MIDDLEWARES entries (registered names,
// integer or null orders) and the settings the built-in middlewares read
// when a crawl starts, whether or not they are enabled, so that a mistake
// is found before it matters. Nothing is built: the HTTP cache opens no
// database here.
func checkSettings(s *settings.Settings) error {
	var errs []error
	add := func(name string, err error) {
		if err != nil {
			errs = append(errs, settings.InvalidErr(s, name, err))
		}
	}
	_, err := registry.Ordered(s, "DOWNLOADER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES_BASE", downloaders.Has)
	add("DOWNLOADER_MIDDLEWARES", err)
	_, err = registry.Ordered(s, "SPIDER_MIDDLEWARES", "SPIDER_MIDDLEWARES_BASE", spiders.Has)
	add("SPIDER_MIDDLEWARES", err)
	_, err = defaultHeaders(s)
	add("DEFAULT_REQUEST_HEADERS", err)
	_, err = cachePolicy(s)
	add("HTTPCACHE_POLICY", err)
	add("RETRY_HTTP_CODES", checkRetryCodes(s))
	_, err = errkind.Resolve("RETRY_EXCEPTIONS", s.Strings("RETRY_EXCEPTIONS"))
	add("RETRY_EXCEPTIONS", err)
	if p, err := parseReferrerPolicy(s.String("REFERRER_POLICY")); err != nil {
		add("REFERRER_POLICY", err)
	} else if p == "" && s.Bool("REFERER_ENABLED") {
		errs = append(errs, settings.Invalid(s, "REFERRER_POLICY", "empty; use one of "+strings.Join(referrerPolicies, ", ")))
	}
	return errors.Join(errs...)
}
