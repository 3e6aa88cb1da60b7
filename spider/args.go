package spider

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// ArgStartURLs is the spider argument every spider built on Base takes:
// -a start_urls=URL[,URL...] replaces its StartURLs.
const ArgStartURLs = "start_urls"

// SetArgs implements ArgsReceiver for a spider built on Base: it takes
// start_urls (see ParseStartURLs), which replaces StartURLs; any other
// argument is an error naming it. A spider with arguments of its own
// writes its own SetArgs and hands start_urls to ParseStartURLs.
func (b *Base) SetArgs(args map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if k != ArgStartURLs {
			return fmt.Errorf("unknown argument %q; this spider takes only %s", k, ArgStartURLs)
		}
		urls, err := ParseStartURLs(args[k])
		if err != nil {
			return err
		}
		b.StartURLs = urls
	}
	return nil
}

// ParseStartURLs reads the value of -a start_urls: absolute http(s) URLs
// separated by commas or white space. An empty list is an error, and so is
// every part that is not such a URL, each named (errors.Is ErrInvalidURL).
func ParseStartURLs(v string) ([]string, error) {
	urls := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(urls) == 0 {
		return nil, fmt.Errorf("%s is empty: pass -a %s=URL[,URL...]", ArgStartURLs, ArgStartURLs)
	}
	var errs []error
	for _, u := range urls {
		if _, err := ParseURL(u); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ArgStartURLs, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return urls, nil
}

// StartHosts returns the host names of StartURLs, lower-cased and each
// once: the AllowedDomains of a spider that stays on the sites it starts
// from, wherever -a start_urls points it.
func (b *Base) StartHosts() []string {
	var hosts []string
	for _, raw := range b.StartURLs {
		if u, err := ParseURL(raw); err == nil {
			if h := strings.ToLower(u.Hostname()); !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}
