package middleware

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// DownloaderFactory builds a downloader middleware for a crawl. It may
// return (nil, nil) to stay out of the chain (for example when its
// *_ENABLED setting is false).
type DownloaderFactory func(c *spider.Crawler) (Downloader, error)

// SpiderFactory builds a spider middleware for a crawl; (nil, nil) stays
// out of the chain.
type SpiderFactory func(c *spider.Crawler) (Spider, error)

var (
	regMu       sync.RWMutex
	downloaders = map[string]DownloaderFactory{}
	spiders     = map[string]SpiderFactory{}
)

// RegisterDownloader makes a downloader middleware available by name to
// DOWNLOADER_MIDDLEWARES.
func RegisterDownloader(name string, f DownloaderFactory) {
	regMu.Lock()
	downloaders[name] = f
	regMu.Unlock()
}

// RegisterSpider makes a spider middleware available by name to
// SPIDER_MIDDLEWARES.
func RegisterSpider(name string, f SpiderFactory) {
	regMu.Lock()
	spiders[name] = f
	regMu.Unlock()
}

// Entry is one enabled component with its order.
type Entry struct {
	Name  string
	Order int
}

// Ordered merges the user's map (setting name) over the base map (setting
// base), drops entries whose order is null, and returns the rest sorted by
// order (then name). known reports whether a name is registered. Errors
// name the setting and the entry.
func Ordered(s *settings.Settings, setting, base string, known func(string) bool) ([]Entry, error) {
	merged := map[string]any{}
	if base != "" {
		maps.Copy(merged, s.Map(base))
	}
	maps.Copy(merged, s.Map(setting))
	var out []Entry
	for _, name := range slices.Sorted(maps.Keys(merged)) {
		v := merged[name]
		if v == nil {
			continue
		}
		n, err := settings.Int.Convert(v)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %q: order must be an integer or null, got %v", setting, name, v)
		}
		if !known(name) {
			return nil, fmt.Errorf("%s: entry %q is not a registered component", setting, name)
		}
		out = append(out, Entry{Name: name, Order: n.(int)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out, nil
}

// BuildDownloader returns the fetcher that runs the enabled downloader
// middlewares around inner, in order: the lowest order sees the request
// first and the response last.
func BuildDownloader(c *spider.Crawler, inner Fetcher) (Fetcher, []string, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	entries, err := Ordered(c.Settings, "DOWNLOADER_MIDDLEWARES", "DOWNLOADER_MIDDLEWARES_BASE",
		func(n string) bool { _, ok := downloaders[n]; return ok })
	if err != nil {
		return nil, nil, err
	}
	f := inner
	var names []string
	for i := len(entries) - 1; i >= 0; i-- {
		m, err := downloaders[entries[i].Name](c)
		if err != nil {
			return nil, nil, fmt.Errorf("downloader middleware %s: %w", entries[i].Name, err)
		}
		if m == nil {
			continue
		}
		f = guardFetcher(entries[i].Name, m.WrapFetcher(f), c)
		names = append([]string{entries[i].Name}, names...)
	}
	return f, names, nil
}

// BuildSpider returns the handler that runs the enabled spider middlewares
// around inner (the callback), lowest order outermost.
func BuildSpider(c *spider.Crawler, inner Handler) (Handler, []string, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	entries, err := Ordered(c.Settings, "SPIDER_MIDDLEWARES", "SPIDER_MIDDLEWARES_BASE",
		func(n string) bool { _, ok := spiders[n]; return ok })
	if err != nil {
		return nil, nil, err
	}
	h := inner
	var names []string
	for i := len(entries) - 1; i >= 0; i-- {
		m, err := spiders[entries[i].Name](c)
		if err != nil {
			return nil, nil, fmt.Errorf("spider middleware %s: %w", entries[i].Name, err)
		}
		if m == nil {
			continue
		}
		h = guardHandler(entries[i].Name, m.WrapHandler(h), c)
		names = append([]string{entries[i].Name}, names...)
	}
	return h, names, nil
}
