package engine

import (
	"context"
	"testing"

	"github.com/gocrawl/gocrawl/internal/callbacks"
	"github.com/gocrawl/gocrawl/internal/reqnames"
	"github.com/gocrawl/gocrawl/spider"
)

// byNameSpider has two callbacks and an errback, each recording its call.
type byNameSpider struct {
	spider.Base
	calls []string
}

func (*byNameSpider) Name() string { return "named" }
func (s *byNameSpider) Parse(context.Context, *spider.Response, spider.Output) error {
	s.calls = append(s.calls, "Parse")
	return nil
}
func (s *byNameSpider) ParseA(context.Context, *spider.Response, spider.Output) error {
	s.calls = append(s.calls, "ParseA")
	return nil
}
func (s *byNameSpider) ParseB(context.Context, *spider.Response, spider.Output) error {
	s.calls = append(s.calls, "ParseB")
	return nil
}
func (s *byNameSpider) OnError(context.Context, *spider.Request, error, spider.Output) error {
	s.calls = append(s.calls, "OnError")
	return nil
}

// TestCallbacksByNameCached checks that callbacks named by requests read
// back from a job (the names they carry) resolve to the right
// methods, the first time and from the engine's cache, and that a name
// the spider lacks is an error every time.
func TestCallbacksByNameCached(t *testing.T) {
	sp := &byNameSpider{}
	e := &Engine{sp: sp}
	named := func(cb, eb string) *spider.Request {
		r := spider.MustRequest("http://h.test/", nil)
		r.Callback = nil
		callbacks.SetStored(r, reqnames.Names{Callback: cb, Errback: eb})
		return r
	}
	ctx := context.Background()
	for range 2 { // resolved, then cached
		for _, tc := range []struct{ cb, eb, want string }{{"", "", "Parse"}, {"ParseA", "", "ParseA"}, {"ParseB", "OnError", "ParseB"}} {
			sp.calls = nil
			cb, eb, err := e.callbacks(named(tc.cb, tc.eb))
			if err != nil {
				t.Fatal(err)
			}
			cb(ctx, nil, nil)
			if eb != nil {
				eb(ctx, nil, nil, nil)
			} else if tc.eb != "" {
				t.Fatalf("errback %q not resolved", tc.eb)
			}
			want := []string{tc.want}
			if tc.eb != "" {
				want = append(want, tc.eb)
			}
			if len(sp.calls) != len(want) || sp.calls[0] != want[0] || (len(want) > 1 && sp.calls[1] != want[1]) {
				t.Fatalf("callbacks named %q, %q called %v, want %v", tc.cb, tc.eb, sp.calls, want)
			}
		}
		if _, _, err := e.callbacks(named("Missing", "")); err == nil {
			t.Fatal("a callback name the spider lacks resolved")
		}
	}
}
