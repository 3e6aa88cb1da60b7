package throttling

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// BenchmarkSendDone is one request's throttling cost on a warm scope:
// Wait, Sent and Done (no feedback).
func BenchmarkSendDone(b *testing.B) {
	th, _ := newTestThrottler(b)
	req := spider.MustRequest("https://example.com/", nil)
	sc := scopesOf("example.com")
	ctx := context.Background()
	now := t0
	for b.Loop() {
		now = now.Add(time.Millisecond)
		th.Wait(now, sc)
		th.Sent(now, sc)
		th.Done(ctx, req, sc, now, nil, nil)
	}
}

// BenchmarkScopeChurn is the same with a new host every time and
// THROTTLING_SCOPE_LIMIT 1,000: creation plus one LRU eviction each.
func BenchmarkScopeChurn(b *testing.B) {
	th, _ := newTestThrottler(b, "THROTTLING_SCOPE_LIMIT", 1000)
	req := spider.MustRequest("https://example.com/", nil)
	ctx := context.Background()
	now := t0
	i := 0
	for b.Loop() {
		i++
		now = now.Add(time.Millisecond)
		sc := Scopes{{Name: "h" + strconv.Itoa(i) + ".example"}}
		th.Wait(now, sc)
		th.Sent(now, sc)
		th.Done(ctx, req, sc, now, nil, nil)
	}
}
