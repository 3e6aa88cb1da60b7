package stats

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestCollector(t *testing.T) {
	c := New()
	c.Inc("a", 1)
	c.Inc("a", 2.5)
	c.Set("b", 7)
	c.Max("m", 3)
	c.Max("m", 2)
	c.Max("neg", -5) // the first Max sets even a negative value
	_ = c.Counter("untouched")
	for key, want := range map[string]float64{"a": 3.5, "b": 7, "m": 3, "neg": -5, "missing": 0, "untouched": 0} {
		if got := c.Get(key); got != want {
			t.Errorf("Get(%s) = %v, want %v", key, got, want)
		}
	}
	if c.Int("a") != 3 {
		t.Errorf("Int(a) = %d", c.Int("a"))
	}
	snap := c.Snapshot()
	if _, ok := snap["untouched"]; ok {
		t.Error("a counter never set appears in the snapshot")
	}
	if keys := c.Keys(); !slices.Equal(keys, []string{"a", "b", "m", "neg"}) {
		t.Errorf("Keys() = %v", keys)
	}
	snap["a"] = 100
	if c.Get("a") != 3.5 {
		t.Error("Snapshot is not a copy")
	}
}

func TestCollectorConcurrent(t *testing.T) {
	c := New()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			ctr := c.Counter("shared")
			for i := range 1000 {
				ctr.Add(1)
				c.Inc(fmt.Sprintf("k%d", i%10), 1)
				c.Max("max", float64(w*1000+i))
				_ = c.Snapshot
			}
		})
	}
	wg.Wait()
	if c.Get("shared") != 8000 || c.Get("k3") != 800 || c.Get("max") != 7999 {
		t.Errorf("shared=%v k3=%v max=%v", c.Get("shared"), c.Get("k3"), c.Get("max"))
	}
}

func BenchmarkInc(b *testing.B) {
	c := New()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Inc("downloader/response_count", 1)
		}
	})
}
