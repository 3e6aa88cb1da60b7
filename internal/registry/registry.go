// Package registry holds components by name: the schedulers, priority
// queues, middlewares, item pipelines and throttling managers that settings
// name as strings. Each package keeps one Registry per kind of component,
// and Ordered reads the settings that enable components in order
// (DOWNLOADER_MIDDLEWARES, SPIDER_MIDDLEWARES, ITEM_PIPELINES).
package registry

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/gocrawl/gocrawl/settings"
)

// Registry maps names to factories of type F. The zero value is empty and
// ready to use; it is safe for concurrent use.
type Registry[F any] struct {
	mu sync.RWMutex
	m  map[string]F
}

// Register stores f under name, replacing an earlier registration.
func (r *Registry[F]) Register(name string, f F) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]F{}
	}
	r.m[name] = f
	r.mu.Unlock()
}

// Lookup returns the factory registered under name.
func (r *Registry[F]) Lookup(name string) (F, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.m[name]
	return f, ok
}

// Has reports whether name is registered.
func (r *Registry[F]) Has(name string) bool {
	_, ok := r.Lookup(name)
	return ok
}

// Names returns the registered names, sorted, for error messages.
func (r *Registry[F]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.m))
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
