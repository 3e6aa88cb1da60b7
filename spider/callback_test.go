package spider

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type cbSpider struct{ Base }

func (*cbSpider) Name() string                                           { return "cb" }
func (*cbSpider) Parse(context.Context, *Response, Output) error         { return nil }
func (*cbSpider) ParseItem(context.Context, *Response, Output) error     { return errors.New("item") }
func (*cbSpider) OnError(context.Context, *Request, error, Output) error { return nil }
func (*cbSpider) WrongShape(context.Context, *Response) error            { return nil }

// embedder gets ParseShared from an embedded struct.
type shared struct{}

func (*shared) ParseShared(context.Context, *Response, Output) error { return errors.New("shared") }

type embedder struct {
	cbSpider
	*shared
}

type otherSpider struct{ Base }

func (*otherSpider) Name() string                                       { return "other" }
func (*otherSpider) Parse(context.Context, *Response, Output) error     { return nil }
func (*otherSpider) ParseItem(context.Context, *Response, Output) error { return nil }

func plainFunc(context.Context, *Response, Output) error { return nil }

func TestFuncName(t *testing.T) {
	s := &cbSpider{}
	e := &embedder{shared: &shared{}}
	o := &otherSpider{}
	for _, tc := range []struct {
		name    string
		sp      Spider
		fn      any
		want    string
		wantErr bool
	}{
		{"method value", s, Callback(s.ParseItem), "ParseItem", false},
		{"Parse", s, Callback(s.Parse), "Parse", false},
		{"errback", s, Errback(s.OnError), "OnError", false},
		{"nil", s, Callback(nil), "", false},
		{"promoted from embedded struct", e, Callback(e.ParseShared), "ParseShared", false},
		{"promoted from embedded spider", e, Callback(e.ParseItem), "ParseItem", false},
		{"closure", s, Callback(func(context.Context, *Response, Output) error { return nil }), "", true},
		{"plain function", s, Callback(plainFunc), "", true},
		{"method of another spider type", s, Callback(o.ParseItem), "", true},
		{"not a function", s, 42, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FuncName(tc.sp, tc.fn)
			if tc.wantErr {
				if !errors.Is(err, ErrNotMethod) {
					t.Fatalf("FuncName = %q, %v; want ErrNotMethod", got, err)
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
	req := MustRequest("http://example.com/", e.ParseShared)
	req.Errback = e.OnError
	if err := NameCallbacks(e, req); err != nil {
		t.Fatal(err)
	}
	if req.CallbackName != "ParseShared" || req.ErrbackName != "OnError" {
		t.Fatalf("names = %q, %q", req.CallbackName, req.ErrbackName)
	}
	// As restored from disk: functions gone, names kept.
	restored := &Request{URL: req.URL, CallbackName: req.CallbackName, ErrbackName: req.ErrbackName}
	cb, eb, err := Callbacks(e, restored)
	if err != nil || eb == nil {
		t.Fatalf("Callbacks = %v", err)
	}
	if err := cb(context.Background(), nil, nil); err == nil || err.Error() != "shared" {
		t.Errorf("restored callback is not ParseShared: %v", err)
	}

	parse := MustRequest("http://example.com/", e.Parse)
	if err := NameCallbacks(e, parse); err != nil || parse.CallbackName != "" {
		t.Errorf("Parse should be stored as the empty name, got %q, %v", parse.CallbackName, err)
	}
	closure := MustRequest("http://example.com/", func(context.Context, *Response, Output) error { return nil })
	if err := NameCallbacks(e, closure); !errors.Is(err, ErrNotMethod) || !strings.Contains(err.Error(), "http://example.com/") {
		t.Errorf("closure: err = %v, want ErrNotMethod naming the request", err)
	}
	if _, _, err := Callbacks(e, &Request{URL: req.URL, CallbackName: "Gone"}); err == nil {
		t.Error("Callbacks with an unknown name did not fail")
	}
}

func TestCrawlerFromContext(t *testing.T) {
	if CrawlerFrom(context.Background()) != nil {
		t.Error("crawler outside a crawl")
	}
	c := &Crawler{}
	if CrawlerFrom(WithCrawler(context.Background(), c)) != c {
		t.Error("crawler not carried")
	}
}

func TestBaseStartIsLazy(t *testing.T) {
	b := &Base{StartURLs: []string{"http://a.com/", "bad", "http://b.com/"}}
	var urls []string
	var errs int
	for req, err := range b.Start(context.Background()) {
		if err != nil {
			errs++
			continue
		}
		urls = append(urls, req.URL.String())
		break // stop after the first: the iterator must honour it
	}
	if len(urls) != 1 || errs != 0 {
		t.Errorf("got %v, %d errors", urls, errs)
	}
	var all int
	for _, err := range b.Start(context.Background()) {
		if err != nil && !errors.Is(err, ErrInvalidURL) {
			t.Errorf("invalid start URL error %v", err)
		}
		all++
	}
	if all != 3 {
		t.Errorf("yielded %d, want 3", all)
	}
}
