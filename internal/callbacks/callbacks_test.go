package callbacks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/internal/reqnames"
	"github.com/gocrawl/gocrawl/spider"
)

type cbSpider struct{ spider.Base }

func (*cbSpider) Name() string                                                 { return "cb" }
func (*cbSpider) Parse(context.Context, *spider.Response, spider.Output) error { return nil }
func (*cbSpider) ParseItem(context.Context, *spider.Response, spider.Output) error {
	return errors.New("item")
}
func (*cbSpider) OnError(context.Context, *spider.Request, error, spider.Output) error { return nil }
func (*cbSpider) WrongShape(context.Context, *spider.Response) error                   { return nil }

// embedder gets ParseShared from an embedded struct.
type shared struct{}

func (*shared) ParseShared(context.Context, *spider.Response, spider.Output) error {
	return errors.New("shared")
}

type embedder struct {
	cbSpider
	*shared
}

type otherSpider struct{ spider.Base }

func (*otherSpider) Name() string                                                     { return "other" }
func (*otherSpider) Parse(context.Context, *spider.Response, spider.Output) error     { return nil }
func (*otherSpider) ParseItem(context.Context, *spider.Response, spider.Output) error { return nil }

func plainFunc(context.Context, *spider.Response, spider.Output) error { return nil }

func TestFuncName(t *testing.T) {
	s := &cbSpider{}
	e := &embedder{shared: &shared{}}
	o := &otherSpider{}
	for _, tc := range []struct {
		name    string
		sp      spider.Spider
		fn      any
		want    string
		wantErr bool
	}{
		{"method value", s, spider.Callback(s.ParseItem), "ParseItem", false},
		{"Parse", s, spider.Callback(s.Parse), "Parse", false},
		{"errback", s, spider.Errback(s.OnError), "OnError", false},
		{"nil", s, spider.Callback(nil), "", false},
		{"promoted from embedded struct", e, spider.Callback(e.ParseShared), "ParseShared", false},
		{"promoted from embedded spider", e, spider.Callback(e.ParseItem), "ParseItem", false},
		{"closure", s, spider.Callback(func(context.Context, *spider.Response, spider.Output) error { return nil }), "", true},
		{"plain function", s, spider.Callback(plainFunc), "", true},
		{"method of another spider type", s, spider.Callback(o.ParseItem), "", true},
		{"not a function", s, 42, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FuncName(tc.sp, tc.fn)
			if tc.wantErr {
				if !errors.Is(err, spider.ErrNotMethod) {
					t.Fatalf("FuncName = %q, %v; want spider.ErrNotMethod", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FuncName = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestResolveCallback(t *testing.T) {
	s := &cbSpider{}
	cb, err := ResolveCallback(s, "ParseItem")
	if err != nil || cb(context.Background(), nil, nil).Error() != "item" {
		t.Fatalf("ResolveCallback(ParseItem) = %v", err)
	}
	if cb, err := ResolveCallback(s, ""); err != nil || cb == nil {
		t.Fatalf("ResolveCallback(\"\") = %v", err)
	}
	for name, want := range map[string]string{
		"Missing":    `no callback method "Missing"`,
		"WrongShape": "want func(context.Context, *spider.Response, spider.Output) error",
		"OnError":    "want func(context.Context, *spider.Response, spider.Output) error",
	} {
		if _, err := ResolveCallback(s, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ResolveCallback(%s) error = %v, want %q", name, err, want)
		}
	}
	if eb, err := ResolveErrback(s, "OnError"); err != nil || eb == nil {
		t.Errorf("ResolveErrback(OnError) = %v", err)
	}
	if eb, err := ResolveErrback(s, ""); err != nil || eb != nil {
		t.Errorf("ResolveErrback(\"\") = %v, %v", eb != nil, err)
	}
	if _, err := ResolveErrback(s, "ParseItem"); err == nil || !strings.Contains(err.Error(), "want func(context.Context, *spider.Request, error, spider.Output) error") {
		t.Errorf("ResolveErrback(ParseItem) error = %v", err)
	}
}

func TestNameCallbacksRoundTrip(t *testing.T) {
	e := &embedder{shared: &shared{}}
	req := spider.MustRequest("http://example.com/", e.ParseShared)
	req.Errback = e.OnError
	if err := NameCallbacks(e, req); err != nil {
		t.Fatal(err)
	}
	if n := Stored(req); n.Callback != "ParseShared" || n.Errback != "OnError" {
		t.Fatalf("names = %q, %q", n.Callback, n.Errback)
	}
	// As restored from disk: functions gone, names kept.
	restored := &spider.Request{URL: req.URL}
	SetStored(restored, Stored(req))
	cb, eb, err := Callbacks(e, restored)
	if err != nil || eb == nil {
		t.Fatalf("Callbacks = %v", err)
	}
	if err := cb(context.Background(), nil, nil); err == nil || err.Error() != "shared" {
		t.Errorf("restored callback is not ParseShared: %v", err)
	}

	parse := spider.MustRequest("http://example.com/", e.Parse)
	if err := NameCallbacks(e, parse); err != nil || Stored(parse).Callback != "" {
		t.Errorf("Parse should be stored as the empty name, got %q, %v", Stored(parse).Callback, err)
	}
	closure := spider.MustRequest("http://example.com/", func(context.Context, *spider.Response, spider.Output) error { return nil })
	if err := NameCallbacks(e, closure); !errors.Is(err, spider.ErrNotMethod) || !strings.Contains(err.Error(), "http://example.com/") {
		t.Errorf("closure: err = %v, want spider.ErrNotMethod naming the request", err)
	}
	gone := &spider.Request{URL: req.URL}
	SetStored(gone, reqnames.Names{Callback: "Gone"})
	if _, _, err := Callbacks(e, gone); err == nil {
		t.Error("Callbacks with an unknown name did not fail")
	}
}
