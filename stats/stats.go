// Package stats collects a crawl's counters: requests, responses by status,
// items, errors by kind, bytes. Keys follow Scrapy's names where one exists
// ("downloader/request_count", "response_status_count/200", "item_scraped_count").
package stats

import (
	"maps"
	"slices"
	"sync"
)

// Collector is a concurrency-safe map of named numbers.
type Collector struct {
	mu sync.Mutex
	v  map[string]float64
}

// New returns an empty collector.
func New() *Collector { return &Collector{v: map[string]float64{}} }

// Inc adds n to key.
func (c *Collector) Inc(key string, n float64) {
	c.mu.Lock()
	c.v[key] += n
	c.mu.Unlock()
}

// Set sets key to v.
func (c *Collector) Set(key string, v float64) {
	c.mu.Lock()
	c.v[key] = v
	c.mu.Unlock()
}

// Max sets key to v if v is larger than the current value.
func (c *Collector) Max(key string, v float64) {
	c.mu.Lock()
	if cur, ok := c.v[key]; !ok || v > cur {
		c.v[key] = v
	}
	c.mu.Unlock()
}

// Get returns key's value (0 if unset).
func (c *Collector) Get(key string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v[key]
}

// Int returns key's value as an int64.
func (c *Collector) Int(key string) int64 { return int64(c.Get(key)) }

// Snapshot returns a copy of every value.
func (c *Collector) Snapshot() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.v)
}

// Keys returns the keys in sorted order.
func (c *Collector) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.v))
}
