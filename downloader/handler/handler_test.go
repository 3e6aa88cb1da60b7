package handler_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/downloader/handler"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

func TestRenderingWants(t *testing.T) {
	req := func(meta any) *spider.Request {
		r := spider.MustRequest("https://app.example.com/x", nil)
		if meta != nil {
			r.Set(handler.MetaRender, meta)
		}
		return r
	}
	hosts := map[string]bool{"app.example.com": true}
	named := map[string]bool{"front-end": true}
	for _, tc := range []struct {
		name   string
		req    *spider.Request
		r      handler.Rendering
		scopes throttling.Scopes
		want   bool
	}{
		{"default off", req(nil), handler.Rendering{}, nil, false},
		{"RENDER_JS", req(nil), handler.Rendering{All: true}, nil, true},
		{"meta false beats RENDER_JS", req(false), handler.Rendering{All: true}, nil, false},
		{"meta string false beats RENDER_JS", req("no"), handler.Rendering{All: true}, nil, false},
		{"meta true", req(true), handler.Rendering{}, nil, true},
		{"meta string", req("true"), handler.Rendering{}, nil, true},
		{"RENDER_SCOPES host", req(nil), handler.Rendering{Scopes: hosts}, nil, true},
		{"RENDER_SCOPES other host", spider.MustRequest("https://b.example.com/", nil), handler.Rendering{Scopes: hosts}, nil, false},
		{"RENDER_SCOPES scope name", req(nil), handler.Rendering{Scopes: named}, throttling.Scopes{{Name: "front-end"}}, true},
	} {
		if got := tc.r.Wants(tc.req, tc.scopes); got != tc.want {
			t.Errorf("%s: Wants = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRenderingFromSettings(t *testing.T) {
	for _, tc := range []struct {
		set     map[string]any
		setting string
	}{
		{nil, ""},
		{map[string]any{"RENDER_JS": true}, "RENDER_JS"},
		{map[string]any{"RENDER_SCOPES": []any{"app.example.com"}}, "RENDER_SCOPES"},
	} {
		s := settings.New()
		if err := s.SetMap(tc.set, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
		got, ok := handler.RenderingFromSettings(s).Enabled()
		if got != tc.setting || ok != (tc.setting != "") {
			t.Errorf("%v: Enabled = %q, %v; want %q", tc.set, got, ok, tc.setting)
		}
	}
}

func TestNotLinkedNamesTheImport(t *testing.T) {
	err := handler.NotLinked("RENDER_JS")
	if !errors.Is(err, handler.ErrNotLinked) {
		t.Fatalf("%v does not wrap ErrNotLinked", err)
	}
	for _, want := range []string{"RENDER_JS", handler.RenderImport} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
}

func TestReport(t *testing.T) {
	if handler.Report(context.Background()) != nil {
		t.Fatal("a bare context has a report function")
	}
	var got error
	want := errors.New("loaded")
	ctx := handler.WithReport(context.Background(), func(_ *spider.Response, err error) { got = err })
	handler.Report(ctx)(nil, want)
	if got != want {
		t.Fatalf("report got %v", got)
	}
}
