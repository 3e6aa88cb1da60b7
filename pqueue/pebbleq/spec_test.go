package pebbleq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/pqueue/pebbleq"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// A JOBDIR restart keeps the throttling rules of a queued request: its
// scopes are those the throttler gave it (the throttling_scopes meta
// replacing the host scope), its throttling_delay mark survives the record
// codec (a copy whose delay was taken at the engine's gate does not wait
// it again after the restart), and a delay not taken yet still holds it
// until the time set at the push.
func TestRestartKeepsScopesAndDelayMark(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	thr, err := throttling.New(settings.New(), throttling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		req        func() *spider.Request
		wantScopes string
		wantWait   time.Duration
	}{
		{"meta scope alone", func() *spider.Request {
			return spider.MustRequest("https://shop.example/api/1", nil).Set(throttling.MetaScopes, "api")
		}, "[{api 0}]", 0},
		{"meta scopes naming the host", func() *spider.Request {
			return spider.MustRequest("https://shop.example/api/1", nil).Set(throttling.MetaScopes, map[string]any{"api": 2, "shop.example": 0})
		}, "[{api 2} {shop.example 0}]", 0},
		{"no meta", func() *spider.Request { return spider.MustRequest("https://shop.example/", nil) }, "[{shop.example 0}]", 0},
		{"copy whose delay was taken", func() *spider.Request {
			r := spider.MustRequest("https://shop.example/", nil).Set(throttling.MetaDelay, 100.0)
			throttling.TakeRequestDelay(r)
			return r.Clone()
		}, "[{shop.example 0}]", 0},
		{"delay not taken", func() *spider.Request {
			return spider.MustRequest("https://shop.example/", nil).Set(throttling.MetaDelay, 100.0)
		}, "[{shop.example 0}]", 100 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			js := openStoreWith(t, t.TempDir(), pebbleq.Options{})
			req := tt.req()
			scopes, err := thr.Scopes(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			q := pqueue.NewPlain(js)
			if err := q.Open(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Push(ctx, t0, req, scopes, 0); err != nil {
				t.Fatal(err)
			}
			js = js.reopen(t)
			q = pqueue.NewPlain(js)
			if err := q.Open(ctx); err != nil {
				t.Fatal(err)
			}
			p, wake, err := q.Pop(ctx, t0)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantWait > 0 {
				if p != nil || wake != tt.wantWait {
					t.Fatalf("after the restart: popped %v, wake %v; want nothing for %v", p != nil, wake, tt.wantWait)
				}
				if p, _, err = q.Pop(ctx, t0.Add(tt.wantWait)); err != nil || p == nil {
					t.Fatalf("not ready after its delay: %v", err)
				}
			} else if p == nil {
				t.Fatalf("not ready after the restart (wake %v)", wake)
			}
			if got := fmt.Sprint(p.Scopes); got != tt.wantScopes {
				t.Errorf("scopes after the restart %s, want %s", got, tt.wantScopes)
			}
			if fmt.Sprint(p.Req.Get(throttling.MetaScopes)) != fmt.Sprint(req.Get(throttling.MetaScopes)) {
				t.Errorf("meta %s after the restart %v, want %v", throttling.MetaScopes, p.Req.Get(throttling.MetaScopes), req.Get(throttling.MetaScopes))
			}
			if d := throttling.TakeRequestDelay(p.Req); d != 0 {
				t.Errorf("the engine gate would wait %v after the restart", d)
			}
		})
	}
}
