package pebbleq

import (
	"testing"

	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
)

func fpOf(i int) dupefilter.Fingerprint {
	var fp dupefilter.Fingerprint
	fp[0], fp[1], fp[2] = byte(i), byte(i>>8), byte(i>>16)
	return fp
}

// TestRecentSetBounded checks that the cache of recent fingerprints stays
// within RecentFingerprints, forgets the oldest, and keeps those in use.
func TestRecentSetBounded(t *testing.T) {
	var r recentSet
	const n = 3 * RecentFingerprints
	for i := range n {
		r.add(fpOf(i))
		if i%1000 == 0 && !r.has(fpOf(0)) {
			t.Fatalf("after %d adds, a fingerprint looked up all along was forgotten", i)
		}
		if got := len(r.cur) + len(r.old); got > RecentFingerprints {
			t.Fatalf("after %d adds the cache holds %d fingerprints, more than %d", i, got, RecentFingerprints)
		}
	}
	if r.has(fpOf(1)) {
		t.Error("an old fingerprint never looked up again is still cached")
	}
	if !r.has(fpOf(n - 1)) {
		t.Error("the last fingerprint added is not cached")
	}
	r.remove(fpOf(n - 1))
	if r.has(fpOf(n - 1)) {
		t.Error("a removed fingerprint is still cached")
	}
}
