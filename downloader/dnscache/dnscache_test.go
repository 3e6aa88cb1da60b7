package dnscache

import (
	"context"
	"testing"
)

func TestIPLiteralsNeedNoLookup(t *testing.T) {
	c := New(2, 0)
	for _, ip := range []string{"127.0.0.1", "::1"} {
		addrs, err := c.Lookup(context.Background(), ip)
		if err != nil || len(addrs) != 1 || addrs[0] != ip {
			t.Errorf("Lookup(%s) = %v, %v", ip, addrs, err)
		}
		if got, ok := c.Cached(ip); !ok || got != ip {
			t.Errorf("Cached(%s) = %q, %v", ip, got, ok)
		}
	}
}

func TestLookupIsCachedAndBounded(t *testing.T) {
	c := New(1, 0)
	// An entry already cached is pushed out by the next lookup in a cache
	// of size 1.
	c.entries["other.invalid"] = c.order.PushFront(&dnsEntry{host: "other.invalid", addrs: []string{"192.0.2.1"}})
	if got, ok := c.Cached("other.invalid"); !ok || got != "192.0.2.1" {
		t.Fatalf("Cached(other.invalid) = %q, %v", got, ok)
	}
	if _, err := c.Lookup(context.Background(), "localhost"); err != nil {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	if _, ok := c.Cached("localhost"); !ok {
		t.Fatal("localhost not cached after a lookup")
	}
	if _, ok := c.Cached("other.invalid"); ok || c.order.Len() != 1 {
		t.Errorf("cache of size 1 holds %d entries (other.invalid kept: %v)", c.order.Len(), ok)
	}
}
