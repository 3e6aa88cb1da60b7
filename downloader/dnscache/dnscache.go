// Package dnscache resolves host names and remembers the answers, with a
// bounded LRU of hosts. The downloader dials through one cache
// (DNSCACHE_ENABLED, DNSCACHE_SIZE, DNS_TIMEOUT), and the throttler reads
// the same cache to give each request an IP scope when
// CONCURRENT_REQUESTS_PER_IP is set, so both agree on a host's address.
package dnscache

import (
	"container/list"
	"context"
	"net"
	"sync"
	"time"
)

// Cache resolves host names and remembers the answers. It is safe for
// concurrent use.
type Cache struct {
	resolver *net.Resolver
	timeout  time.Duration
	size     int

	mu      sync.Mutex
	entries map[string]*list.Element
	order   *list.List // front = most recently used
}

type dnsEntry struct {
	host  string
	addrs []string
}

// New returns a cache of at most size host names (0 = unbounded)
// whose lookups fail after timeout (0 = no timeout).
func New(size int, timeout time.Duration) *Cache {
	return &Cache{resolver: net.DefaultResolver, timeout: timeout, size: size,
		entries: map[string]*list.Element{}, order: list.New()}
}

// Lookup returns the addresses of host, from the cache when present. An IP
// literal is returned as is.
func (c *Cache) Lookup(ctx context.Context, host string) ([]string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []string{host}, nil
	}
	c.mu.Lock()
	if el, ok := c.entries[host]; ok {
		c.order.MoveToFront(el)
		addrs := el.Value.(*dnsEntry).addrs
		c.mu.Unlock()
		return addrs, nil
	}
	c.mu.Unlock()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	addrs, err := c.resolver.LookupHost(ctx, host)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[host]; ok {
		el.Value.(*dnsEntry).addrs = addrs
		c.order.MoveToFront(el)
		return addrs, nil
	}
	c.entries[host] = c.order.PushFront(&dnsEntry{host: host, addrs: addrs})
	if c.size > 0 && c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.entries, old.Value.(*dnsEntry).host)
	}
	return addrs, nil
}

// Cached returns the first cached address of host without resolving, and
// whether there was one. IP literals are always "cached".
func (c *Cache) Cached(host string) (string, bool) {
	if ip := net.ParseIP(host); ip != nil {
		return host, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[host]; ok && len(el.Value.(*dnsEntry).addrs) > 0 {
		return el.Value.(*dnsEntry).addrs[0], true
	}
	return "", false
}
