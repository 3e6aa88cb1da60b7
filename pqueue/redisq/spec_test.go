package redisq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/scheduler/dupefilter"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// The Redis frontier follows the throttler's rules for a request's scopes
// and its throttling_delay: a request with the throttling_scopes meta
// "api" is stored and gated under api alone (not under its host's delay),
// a request whose delay was taken at another gate (or a copy of it) is
// ready at once, and a delay not taken yet holds the request on Redis's
// clock and comes out marked.
func TestFrontierScopesAndDelayMark(t *testing.T) {
	thr, err := throttling.New(settings.New(), throttling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		name       string
		reqs       func() []*spider.Request
		wantAtOnce int           // popped at t0
		wantLater  time.Duration // when the rest is ready (0: nothing left)
		wantScopes string        // of the first popped request
	}{
		{"meta scope replaces the host's", func() []*spider.Request {
			var out []*spider.Request
			for i := range 4 {
				out = append(out, spider.MustRequest(fmt.Sprintf("http://h.test/api/%d", i), nil).Set(throttling.MetaScopes, "api"))
			}
			return append(out, spider.MustRequest("http://h.test/page/0", nil), spider.MustRequest("http://h.test/page/1", nil))
		}, 5, 0, "[{api 0}]"},
		{"delay taken elsewhere", func() []*spider.Request {
			r := spider.MustRequest("http://h.test/page/0", nil).Set(throttling.MetaDelay, 100.0)
			throttling.TakeRequestDelay(r)
			return []*spider.Request{r.Clone()}
		}, 1, 0, "[{h.test 0}]"},
		{"delay not taken", func() []*spider.Request {
			return []*spider.Request{spider.MustRequest("http://h.test/page/0", nil).Set(throttling.MetaDelay, 100.0)}
		}, 0, 100 * time.Second, "[{h.test 0}]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The host has a 2 s delay; api has none and room for 4.
			w := newWorld(t, 1, throttling.GateParams{Concurrency: 8, Delay: 2 * time.Second},
				map[string]throttling.GateParams{"api": {Concurrency: 4}})
			f := w.worker("a", redisq.FrontierOptions{})
			for _, req := range tt.reqs() {
				sc, err := thr.Scopes(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.PushUnique(ctx, w.clk.Now(), req, sc, 0, dupefilter.Of(req), true); err != nil {
					t.Fatal(err)
				}
			}
			flush(t, f)
			got := popAll(t, f, w.clk.Now())
			if len(got) != tt.wantAtOnce {
				t.Fatalf("%d requests ready at once, want %d", len(got), tt.wantAtOnce)
			}
			if tt.wantLater > 0 {
				w.advance(tt.wantLater - time.Millisecond)
				if p, _ := pop(t, f, w.clk.Now()); p != nil {
					t.Fatal("ready 1 ms before its delay ended")
				}
				w.advance(time.Millisecond)
				got = popAll(t, f, w.clk.Now())
				if len(got) != 1 {
					t.Fatalf("%d requests ready after the delay, want 1", len(got))
				}
			}
			if s := fmt.Sprint(got[0].Scopes); s != tt.wantScopes {
				t.Errorf("scopes %s, want %s", s, tt.wantScopes)
			}
			for _, p := range got {
				if d := throttling.TakeRequestDelay(p.Req); d != 0 {
					t.Errorf("%s: the engine gate would wait %v more", p.Req.URL, d)
				}
			}
		})
	}
}
