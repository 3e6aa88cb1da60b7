// Package stats collects a crawl's counters: requests, responses by status,
// items, errors by kind, bytes. Keys follow Scrapy's names where one exists
// ("downloader/request_count", "downloader/response_status_count/200",
// "item_scraped_count").
//
// Every method is safe for concurrent use and cheap enough for the hot
// path: a key's value is an atomic number, found through a read-locked map.
// Code that updates the same key for every request can keep its *Counter
// (Collector.Counter) and skip the map lookup.
package stats

import (
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Names of the counters that several packages share: the engine counts
// them; the progress line, the Prometheus exporter, the report and the
// end-of-run summary read them.
const (
	// ItemScrapedCount counts the items that passed every pipeline.
	ItemScrapedCount = "item_scraped_count"
	// ItemDroppedCount counts the items a pipeline dropped.
	ItemDroppedCount = "item_dropped_count"
)

// Collector is a concurrency-safe map of named numbers.
type Collector struct {
	mu sync.RWMutex
	v  map[string]*Counter
}

// New returns an empty collector.
func New() *Collector { return &Collector{v: map[string]*Counter{}} }

// Counter is one named number of a Collector. A Counter that was never
// changed does not appear in Snapshot or Keys.
type Counter struct {
	bits atomic.Uint64 // math.Float64bits of the value
	set  atomic.Bool
}

// Add adds n to the counter.
func (c *Counter) Add(n float64) {
	for {
		old := c.bits.Load()
		if c.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+n)) {
			c.set.Store(true)
			return
		}
	}
}

// Set sets the counter to v.
func (c *Counter) Set(v float64) {
	c.bits.Store(math.Float64bits(v))
	c.set.Store(true)
}

// Max sets the counter to v if v is larger than its value (or it was never
// set).
func (c *Counter) Max(v float64) {
	for {
		old := c.bits.Load()
		if c.set.Load() && math.Float64frombits(old) >= v {
			return
		}
		if c.bits.CompareAndSwap(old, math.Float64bits(v)) {
			c.set.Store(true)
			return
		}
	}
}

// Value returns the counter's value.
func (c *Counter) Value() float64 { return math.Float64frombits(c.bits.Load()) }

// Counter returns the counter for key, creating it (unset) if needed. Keep
// it to update a key often without looking it up.
func (c *Collector) Counter(key string) *Counter {
	c.mu.RLock()
	ctr, ok := c.v[key]
	c.mu.RUnlock()
	if ok {
		return ctr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ctr, ok := c.v[key]; ok {
		return ctr
	}
	ctr = &Counter{}
	c.v[key] = ctr
	return ctr
}

// Inc adds n to key.
func (c *Collector) Inc(key string, n float64) { c.Counter(key).Add(n) }

// Set sets key to v.
func (c *Collector) Set(key string, v float64) { c.Counter(key).Set(v) }

// Max sets key to v if v is larger than the current value.
func (c *Collector) Max(key string, v float64) { c.Counter(key).Max(v) }

// Get returns key's value (0 if unset).
func (c *Collector) Get(key string) float64 {
	c.mu.RLock()
	ctr, ok := c.v[key]
	c.mu.RUnlock()
	if !ok {
		return 0
	}
	return ctr.Value()
}

// Int returns key's value as an int64.
func (c *Collector) Int(key string) int64 { return int64(c.Get(key)) }

// Snapshot returns a copy of every value that was set.
func (c *Collector) Snapshot() map[string]float64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]float64, len(c.v))
	for k, ctr := range c.v {
		if ctr.set.Load() {
			out[k] = ctr.Value()
		}
	}
	return out
}

// Keys returns the keys that were set, in sorted order.
func (c *Collector) Keys() []string {
	return slices.Sorted(maps.Keys(c.Snapshot()))
}
