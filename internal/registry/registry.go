// Package registry holds components by name: the schedulers, priority
// queues, middlewares, item pipelines and throttling managers that settings
// name as strings. Each package keeps one Registry per kind of component.
package registry

import (
	"maps"
	"slices"
	"sync"
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
